//! Host tests of the tasks on their own (the executor is tested in `super::super::tests`).
