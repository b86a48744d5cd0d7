//! What the load generator measured.

use serde::Serialize;

/// What the client measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadReport {
    pub sent: u64,
    pub received: u64,
    /// Replies whose payload was not what the program should answer.
    pub wrong_replies: u64,
    /// Replies that matched no outstanding request.
    pub unexpected_replies: u64,
    /// Frames that reached the client but were no reply to it, dropped
    /// as a host drops them: addressed to another host (the node itself,
    /// broadcast, multicast, loopback, any other address), or not a
    /// nanoPU data packet.
    pub frames_not_for_client: u64,
    /// Requests that got no reply within the timeout.
    pub lost: u64,
    /// The first wrong reply, described.
    pub first_error: Option<String>,
    /// The application driven (`[load] app`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app: Option<&'static str>,
    /// Requests re-sent because the application said so (a reply asking
    /// for a retry, or a timeout it chose to retry).
    pub retries: u64,
    /// NACKs received (`[load] connections`); each NACK of a measured
    /// request counts as an infinite response time in the percentiles
    /// (NEBULA §VI), which are then infinite if there are enough of them.
    #[serde(skip_serializing_if = "is_zero")]
    pub nacks: u64,
    /// Requests given up after `connections.max_attempts` NACKed sends
    /// (also counted in `lost`).
    #[serde(skip_serializing_if = "is_zero")]
    pub gave_up: u64,
    /// Response time at the client: its request's first send to the last
    /// bit of the reply reaching it, in ns (after the warm-up).
    pub client_p50_ns: f64,
    pub client_p90_ns: f64,
    pub client_p99_ns: f64,
    pub client_p999_ns: f64,
    pub client_mean_ns: f64,
    /// Response time at the node's wire, in ns (after the warm-up): from
    /// the request's first bit reaching the server that answered to the
    /// reply's last bit leaving it.
    pub p50_ns: f64,
    pub p90_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    pub mean_ns: f64,
    /// Replies per second over the measured interval, in millions.
    pub throughput_mrps: f64,
    /// Reply payload throughput including packet headers, Gb/s.
    pub throughput_gbps: f64,
    /// Simulated time from the first measured request to the last reply, ns.
    pub measured_ns: f64,
    /// The same percentiles for each destination context.
    pub per_context: Vec<ContextReport>,
    /// Requests outstanding (sent, not yet answered) just after the request
    /// half-way through the measured ones was sent, and just after the last
    /// one was: the backlog check of a sustained load (a queue that keeps up
    /// holds about as many at both points).
    pub outstanding_at_midpoint: u64,
    pub outstanding_at_last_send: u64,
    /// Requests sent after the midpoint one (the backlog's growth is out of these).
    pub sent_after_midpoint: u64,
    /// Start-up messages the program sent to the client (`Start::StartMessages`).
    pub start_messages: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl LoadReport {
    /// How much the backlog grew over the second half of the sends.
    pub fn backlog_growth(&self) -> i64 {
        self.outstanding_at_last_send as i64 - self.outstanding_at_midpoint as i64
    }
}

/// Response times of the requests to one context.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ContextReport {
    pub context: u16,
    pub received: u64,
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub max_ns: f64,
}
