//! What the worker reads of a Stripe delivery: the `Stripe-Signature` header and the event
//! envelope. Pure functions of their inputs, tested on the host.

pub mod envelope;
pub mod signature;

#[cfg(test)]
mod tests;
