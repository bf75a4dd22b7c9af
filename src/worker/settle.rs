//! Running a won claim to its end, and settling it; shared by both front doors.

use std::future::Future;

use worker::Context;

use super::authority_client::AuthorityClient;
use crate::authority::{AuthorityReply, AuthorityRequest};
use crate::claim::{CachedResponse, ClaimPolicy, Fence};

/// How a won claim ends.
pub enum Settle {
    /// The work is done: finalize, keeping this response for replays (if any).
    Finalize(Option<CachedResponse>),
    /// The work failed: release, with this reason, so a retry runs it again.
    Release(String),
}

/// Finalizes or releases the claim on `key` held with `fence`, and returns the authority's reply.
pub async fn settle(
    client: &AuthorityClient,
    key: &str,
    fence: Fence,
    policy: ClaimPolicy,
    how: Settle,
) -> AuthorityReply {
    let request = match how {
        Settle::Finalize(response) => AuthorityRequest::Finalize {
            key: key.to_owned(),
            fence,
            policy,
            response,
        },
        Settle::Release(reason) => AuthorityRequest::Release {
            key: key.to_owned(),
            fence,
            reason,
            policy,
        },
    };
    client.send(key, &request).await
}

/// Runs `work` inside `waitUntil`, so it completes even if the client hangs up, and waits for
/// its result. `None` only if the runtime dropped the work before it finished.
pub async fn to_completion<T: 'static>(
    ctx: &Context,
    work: impl Future<Output = T> + 'static,
) -> Option<T> {
    let (sender, receiver) = futures_channel::oneshot::channel();
    ctx.wait_until(async move {
        let _ = sender.send(work.await);
    });
    receiver.await.ok()
}
