//! Running built-in verbs clients in a cluster: put them on RDMA-NIC node
//! hosts, run until each is done, and collect what they measured.

use super::client::VerbsClient;
use crate::cluster::{Cluster, ClusterEnd, StopWhen};
use crate::SystemError;
use nanopu_sim::{SimDuration, SimTime};

/// Why a run of verbs clients failed.
#[derive(Debug, thiserror::Error)]
pub enum VerbsRunError {
    #[error(transparent)]
    System(#[from] SystemError),
    #[error("host {0} is not a node with an RDMA NIC (give it `nic = \"rdma\"`)")]
    NotRdma(usize),
    #[error("host {host} did not create its {qps} queue pairs by {limit_us} us simulated (run ended {end:?}): its program failed to set up")]
    NotReady {
        host: usize,
        qps: usize,
        limit_us: u64,
        end: ClusterEnd,
    },
    #[error("verbs clients not done at {at_us} us simulated (limit {limit_us} us; {done} of {clients} done; run ended {end:?}{}); unfinished: {unfinished:?}; NIC errors: {errors:?}", if matches!(end, ClusterEnd::Idle) { ": nothing left to happen, a request or reply is lost for good" } else { "" })]
    NotDone {
        at_us: u64,
        limit_us: u64,
        done: usize,
        clients: usize,
        end: ClusterEnd,
        /// Each unfinished client's host and what it reports.
        unfinished: Vec<String>,
        errors: Vec<String>,
    },
}

/// Gives host `h` (an RDMA node) `client`, started at `start`.
pub fn attach_client(
    c: &mut Cluster,
    h: usize,
    client: Box<dyn VerbsClient>,
    start: SimTime,
) -> Result<(), VerbsRunError> {
    let nic = c
        .host_mut(h)
        .as_node_mut()
        .and_then(|n| n.nic.as_rdma_mut())
        .ok_or(VerbsRunError::NotRdma(h))?;
    nic.set_client(client, start);
    Ok(())
}

/// Client of host `h`, if it has one.
pub fn client_of(c: &Cluster, h: usize) -> Option<&dyn VerbsClient> {
    c.host(h).as_node()?.nic.as_rdma()?.client()
}

/// Runs until host `server`'s NIC has `qps` queue pairs (its program has
/// set up: memory initialized, regions registered, connections made);
/// returns that time.
pub fn run_until_ready(
    c: &mut Cluster,
    server: usize,
    qps: usize,
    limit: SimTime,
) -> Result<SimTime, VerbsRunError> {
    let slice = SimDuration::from_us(5);
    let mut t = SimTime::ZERO;
    let stop = StopWhen {
        clients_done: false,
        node_exits: true,
    };
    loop {
        let nic = c
            .host(server)
            .as_node()
            .and_then(|n| n.nic.as_rdma())
            .ok_or(VerbsRunError::NotRdma(server))?;
        if nic.qp_count() >= qps {
            return Ok(t);
        }
        let end = c.run_until(t + slice, stop)?;
        t += slice;
        if t >= limit || matches!(end, ClusterEnd::Exited { .. }) {
            return Err(VerbsRunError::NotReady {
                host: server,
                qps,
                limit_us: limit.fs() / 1_000_000_000,
                end,
            });
        }
    }
}

/// Runs until every host in `hosts` has its client done (checked every
/// `slice`), or fails at `limit`.
pub fn run_clients(
    c: &mut Cluster,
    hosts: &[usize],
    limit: SimTime,
) -> Result<SimTime, VerbsRunError> {
    let slice = SimDuration::from_us(5);
    let mut t = SimTime::ZERO;
    let stop = StopWhen {
        clients_done: false,
        node_exits: true,
    };
    loop {
        let done = hosts
            .iter()
            .filter(|&&h| client_of(c, h).is_some_and(|x| x.done()))
            .count();
        if done == hosts.len() {
            return Ok(t);
        }
        let end = c.run_until(t + slice, stop)?;
        t += slice;
        // Idle: no event is left, so no client can make progress any more.
        let stopped = t >= limit || matches!(end, ClusterEnd::Exited { .. } | ClusterEnd::Idle);
        let done = hosts
            .iter()
            .filter(|&&h| client_of(c, h).is_some_and(|x| x.done()))
            .count();
        if stopped && done < hosts.len() {
            let errors = (0..c.hosts())
                .filter_map(|h| {
                    c.host(h)
                        .as_node()?
                        .nic
                        .as_rdma()
                        .map(|n| n.stats.errors.clone())
                })
                .flatten()
                .collect();
            let unfinished = hosts
                .iter()
                .filter_map(|&h| {
                    let cl = client_of(c, h)?;
                    (!cl.done()).then(|| format!("host {h}: {}", cl.report()))
                })
                .collect();
            return Err(VerbsRunError::NotDone {
                at_us: t.since(SimTime::ZERO).as_ns() as u64 / 1000,
                limit_us: (limit.fs() / 1_000_000_000),
                done,
                clients: hosts.len(),
                end,
                unfinished,
                errors,
            });
        }
    }
}
