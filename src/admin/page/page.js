// The operator page's script.
