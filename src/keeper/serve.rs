//! A request to the object: one rule from [`crate::authority`] over its store, under a fresh
//! salt, and the alarm the write needs.

use super::{Keeper, ObjectIo};
use crate::authority::{self, alarm, AuthorityReply, AuthorityRequest, Begin, Deliver, Won};
use crate::claim::{Millis, Nonce};

impl<I: ObjectIo> Keeper<I> {
    /// Serves `request` (any but a delivery; see [`Keeper::begin`]) with the raw `body` beside
    /// it. Strict about the alarm: an event stored (or redelivered) for the alarm to deliver is
    /// not acknowledged unless the alarm is set (see [`alarm::reply_after`]); the sender's
    /// retry sets it.
    pub async fn serve(&self, request: &AuthorityRequest, body: &[u8]) -> AuthorityReply {
        let now = self.io.now_ms();
        let salt = match Nonce::random() {
            Ok(salt) => salt,
            Err(error) => return AuthorityReply::from(error),
        };
        let served = self
            .with_store_step(request.key(), request.op(), |store| {
                authority::handle(store, request, body, now, salt)
            })
            .await;
        match served {
            Ok((reply, step)) => alarm::reply_after(reply, step),
            Err(error) => AuthorityReply::from(error),
        }
    }

    /// Begins `deliver` (see [`authority::begin`]): the claim it won, to forward under, and
    /// when; or the reply when it is not forwarded.
    pub async fn begin(&self, deliver: &Deliver) -> Result<(Won, Millis), AuthorityReply> {
        let now = self.io.now_ms();
        let salt = Nonce::random().map_err(AuthorityReply::from)?;
        let begun = self
            .with_store(&deliver.key, "deliver", |store| {
                authority::begin(store, deliver, now, salt)
            })
            .await;
        match begun {
            Ok(Begin::Forward(won)) => Ok((won, now)),
            Ok(Begin::Reply(reply)) => Err(reply),
            Err(error) => Err(AuthorityReply::from(error)),
        }
    }
}
