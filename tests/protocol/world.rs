//! The state the model checker explores: one key's claim authority (its durable store and
//! alarm, and what its instance holds in memory), the handler runs at the origin, the senders,
//! an operator, and the ghost facts the invariants are judged on.

use webhook_dedup::claim::{MemoryClaimStore, Millis};
use webhook_dedup::claim_authority::alarm::KnownAlarm;
use webhook_dedup::claim_authority::attempt::Event;
use webhook_dedup::claim_authority::object::task::{AlarmTask, ForwardTask};
use webhook_dedup::claim_authority::AuthorityReply;
use webhook_dedup::failure_index::{IndexRequest, MemoryIndexStore};
use webhook_dedup::origin_gate::{Gate, GateState, Permit};

/// Which front door a delivery comes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Door {
    /// The Stripe webhook door (sync or queue mode, as the live configuration says).
    Webhook,
    /// The Idempotency-Key door, with a request fingerprint (two requests differ by it).
    Api(u8),
    /// The reconciler handing Stripe's listing of the event to its claim, as
    /// `POST /admin/reconcile` and the scheduled run do (`reconciler::reconciled_request`).
    Reconcile,
}

/// A forward the object is running (lost when the instance crashes).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Forward {
    /// The product's own forward task, with its attempt driver.
    pub task: ForwardTask,
    /// The handler run it started at the origin, and whether it still listens for its answer.
    pub run: usize,
    pub listens: bool,
    /// The sender waiting for its answer (none for an attempt run from the alarm).
    pub sender: Option<usize>,
    /// The request fingerprint it forwards (Idempotency-Key door).
    pub fingerprint: Option<u8>,
    /// Started by the alarm, which waits for it to end.
    pub from_alarm: bool,
    /// The claim generation it won.
    pub generation: u32,
    /// The notice it waits on the failure index's answer for, once its attempt is over.
    pub asking: Option<IndexRequest>,
    /// The origin's answer, come while it was not waiting for it: read as soon as it is.
    pub buffered: Option<Event>,
    /// How many settles it ran.
    pub settles: u8,
}

/// A request the origin's gate sent on and waits for: an attempt of the model's event (its
/// handler run), or of another event's (none).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GateFetch {
    pub permit: Permit,
    pub run: Option<usize>,
    /// When the gate's own wait for the answer ends (its time-out).
    pub ends_at: Millis,
}

/// The alarm handler, while it runs: the product's own alarm task, and what it waits for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Alarm {
    pub task: AlarmTask,
    /// The report it waits on the failure index's answer for.
    pub asking: Option<IndexRequest>,
}

/// How a handler run ended at the origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunEnd {
    /// Still running.
    Running,
    /// Finished and did its work.
    Succeeded,
    /// Finished without doing it.
    Failed,
}

/// One run of the user's handler.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Run {
    pub started_at: Millis,
    /// Until when its answer is awaited (the wait horizon): a run still going after it is a
    /// handler slower than the horizon.
    pub horizon: Millis,
    pub end: RunEnd,
    /// Its answer was lost on the way back (a gateway's 502, a reset): it may have done its work.
    pub lost: bool,
    /// A crash cut off the forward (or its settle) before the outcome was recorded.
    pub cut: bool,
    /// It finished after its horizon, when nobody listened any more.
    pub late: bool,
    /// Its outcome could not be recorded: every settle failed before its lease ended.
    pub unrecorded: bool,
}

/// What a sender heard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Heard {
    /// Still waiting for the answer.
    Waiting,
    /// A 2xx (processed, duplicate, queued) or a replay.
    Acked,
    /// Anything else: it will come back.
    Refused,
}

/// One delivery sent to the object.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Sender {
    pub nonce: u8,
    pub door: Door,
    pub heard: Heard,
}

/// Facts about the history that the invariants are judged on (never read by the rules).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// Bumped at every claim or attempt won, and every record made anew.
    pub generation: u32,
    /// Bumped every time a record is made where there was none.
    pub record: u32,
    /// The record the operator last read.
    pub read_record: u32,
    /// The latest run's outcome cannot be learned any more: the next run must be a takeover.
    pub unknown_pending: bool,
    /// A webhook sender was told its event is accepted (2xx or queued), and no operator
    /// released or forgot the record since.
    pub acked: bool,
    /// When a record's retention last ended: runs started before then are its, and excused.
    pub expired_at: Option<Millis>,
    /// When an operator last released or forgot the record.
    pub operator_at: Option<Millis>,
    /// The request fingerprint of the answer kept for replay.
    pub cached_fingerprint: Option<u8>,
    /// The last request to reach the object could not set the alarm due work needs, and its
    /// sender was told to retry: excused for the record it was about (its number), until the
    /// next request.
    pub alarm_excused: Option<u32>,
    /// When the alarm handler last ran.
    pub alarm_ran_at: Option<Millis>,
    /// The alarm handler could not read the store and set itself again for this time.
    pub alarm_blocked_until: Option<Millis>,
    /// Broken invariants found on a transition (bits of [`super::Violation`]).
    pub violations: u32,
    /// A send to the failure index failed, its changes kept for the next.
    pub report_lost: bool,
    /// When a forward last heard the origin throttle (the scenario's failing answer with its
    /// `Retry-After`).
    pub throttled_at: Option<Millis>,
    /// Scenarios reached (bits of [`super::Reached`]).
    pub reached: u32,
    /// An operator paused the origin, and has not resumed it since.
    pub operator_paused: bool,
    /// The origin asked (`Retry-After`) to be left alone until then.
    pub throttled_until: Option<Millis>,
}

/// What is left of each kind of nondeterministic event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Budget {
    pub deliveries: u8,
    pub crashes: u8,
    pub store_failures: u8,
    pub alarm_failures: u8,
    pub deploys: u8,
    pub operator: u8,
    /// Answers of the failure index that fail, or are lost after it applied them.
    pub index_failures: u8,
    /// Times the clock moves on while a timer or the alarm is due (they fire late).
    pub late_timers: u8,
    /// Attempts of other events at the same origin, through its gate.
    pub others: u8,
    /// An operator's pauses and resumes of the origin.
    pub pauses: u8,
    /// Crashes of the gate's instance.
    pub gate_crashes: u8,
}

/// Everything the model checker explores.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World {
    pub now: Millis,
    /// Which of the scenario's configurations is deployed.
    pub deploy: usize,
    /// The object's durable storage.
    pub store: MemoryClaimStore,
    /// The object's durable alarm.
    pub alarm: Option<Millis>,
    /// The next `setAlarm` fails.
    pub alarm_fails: bool,
    /// What the object's instance knows of its alarm (lost with the instance).
    pub known: KnownAlarm,
    /// The alarm handler, while it runs (lost with the instance).
    pub alarm_run: Option<Alarm>,
    /// The instance dies right after the next store step.
    pub crash_after_store: bool,
    pub forwards: Vec<Forward>,
    pub runs: Vec<Run>,
    pub senders: Vec<Sender>,
    /// The operator's last read of the record (the inspect reply).
    pub read: Option<AuthorityReply>,
    /// The failure index's storage.
    pub index: MemoryIndexStore,
    pub next_nonce: u8,
    pub left: Budget,
    pub ghost: Ghost,
    /// The origin's gate (its instance: lost in a crash).
    pub gate: Gate,
    /// What the gate stored.
    pub gate_stored: GateState,
    /// The requests the gate sent on and waits for.
    pub fetches: Vec<GateFetch>,
}

impl World {
    /// The start: nothing stored, nothing running.
    pub fn new(budget: Budget) -> World {
        World {
            now: 1_000,
            deploy: 0,
            store: MemoryClaimStore::new(),
            alarm: None,
            alarm_fails: false,
            known: KnownAlarm::Unknown,
            alarm_run: None,
            crash_after_store: false,
            forwards: Vec::new(),
            runs: Vec::new(),
            senders: Vec::new(),
            read: None,
            index: MemoryIndexStore::default(),
            next_nonce: 1,
            left: budget,
            ghost: Ghost::default(),
            gate: Gate::default(),
            gate_stored: GateState::default(),
            fetches: Vec::new(),
        }
    }
}
