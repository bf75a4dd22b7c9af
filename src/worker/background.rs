//! Work that must finish even if the client hangs up; shared by every front door.

use std::future::Future;

use worker::Context;

/// Runs `work` inside `waitUntil`, so it completes even if the client hangs up (the runtime
/// gives such work about 30 s after the response), and waits for its result. `None` only if
/// the runtime dropped the work before it finished.
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
