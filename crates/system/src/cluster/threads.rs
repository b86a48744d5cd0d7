//! Running a [`Cluster`] of built-in hosts partitioned, on host threads
//! ([`crate::partition`]): the settings and what to say about them.

use super::Cluster;
use crate::error::SystemError;
use crate::partition::{Parallel, MIN_THREADED_LOOKAHEAD};
use nanopu_sim::SimDuration;

impl Cluster {
    /// Simulates the network partitioned, on `threads` host threads, from
    /// now on (docs/parallel-network.md): results are the same for any
    /// number of threads, one included. Nothing may have been scheduled,
    /// captured or recorded yet.
    ///
    /// Only networks of built-in traffic hosts are partitioned: with a node
    /// or a load generator the single event loop runs the network, on one
    /// thread, whatever `threads` says (a note says so).
    /// A network whose partitions exchange frames more often than every
    /// 200 ns of simulated time (the lookahead; 43 ns on a single switch),
    /// or that is one partition, is not partitioned: threads would never
    /// pay there, and the single event loop, faster than partitions on one
    /// thread, runs it whatever `threads` says (so the results are the same
    /// for any `threads` there too; see [`Cluster::parallel_note`]).
    /// [`Cluster::force_threads`] partitions it anyway.
    pub fn set_threads(&mut self, threads: usize) -> Result<(), SystemError> {
        self.partition(threads, false)
    }

    /// The most partitions the leaves of a network are grouped into when
    /// threads are set, and its spines (default [`DEFAULT_PARTITIONS`]; set it before
    /// [`Cluster::set_threads`]): results may depend on it, never on the
    /// thread count.
    ///
    /// [`DEFAULT_PARTITIONS`]: crate::DEFAULT_PARTITIONS
    pub fn set_partitions(&mut self, partitions: usize) -> Result<(), SystemError> {
        if partitions == 0 {
            return Err(SystemError::Config(
                "partitions = 0: a network is at least one partition".into(),
            ));
        }
        if self.par.is_some() {
            return Err(SystemError::Config(format!(
                "partitions = {partitions}: set before threads"
            )));
        }
        self.partitions = partitions;
        Ok(())
    }

    /// [`Cluster::set_threads`] on exactly `threads` threads (at most one
    /// per partition), however short the lookahead: for tests and
    /// measurements of the partitioned engine itself.
    pub fn force_threads(&mut self, threads: usize) -> Result<(), SystemError> {
        self.partition(threads, true)
    }

    /// Why the partitioned simulation runs on fewer threads than asked,
    /// if it does (after a run: also how much of it ran on fewer, chosen
    /// as it went because one thread was faster on this host then).
    pub fn parallel_note(&self) -> Option<String> {
        if let Some(note) = &self.single_loop_note {
            return Some(note.clone());
        }
        let p = self.par.as_ref()?;
        let (used, asked) = p.threads();
        let share = p.threaded_share();
        if used == asked && used > 1 && share < 1.0 && self.events > 0 {
            return Some(format!(
                "threads = {asked}: {:.0}% of simulated time ran on {asked} threads, the rest \
                 on 1 (measured faster at the time on this host; results are the same)",
                share * 100.0
            ));
        }
        // More threads asked for than there are partitions.
        (used < asked).then(|| {
            format!(
                "threads = {asked}: {} partitions run on {used} thread{} (one partition per \
                 thread at most; results are the same)",
                p.partitions(),
                if used == 1 { "" } else { "s" },
            )
        })
    }

    fn partition(&mut self, threads: usize, force: bool) -> Result<(), SystemError> {
        if threads == 0 {
            return Err(SystemError::Config(
                "threads = 0: at least one thread runs the simulation".into(),
            ));
        }
        if let Some(h) = self.hosts.iter().position(|h| !h.is_builtin()) {
            let what = self.hosts[h].kind_name();
            if force {
                return Err(SystemError::Config(format!(
                    "threads = {threads}: host {h} is {what} (only networks of built-in \
                     hosts are partitioned)"
                )));
            }
            // As for a network threads could never speed up: the single
            // loop, whatever `threads` says (so results do not depend on it).
            self.par = None;
            self.single_loop_note = Some(format!(
                "threads = {threads}: host {h} is {what}, so the single event loop runs the \
                 network, on 1 thread (only networks of built-in hosts are partitioned; \
                 nodes' cores on threads measured slower, docs/parallel-network.md)"
            ));
            return Ok(());
        }
        if !self.queue.is_empty() || self.par.as_ref().is_some_and(|p| !p.is_idle()) {
            return Err(SystemError::Config(format!(
                "threads = {threads}: set before any message is sent"
            )));
        }
        if self.record_transmits || self.net.observed() {
            return Err(SystemError::Config(format!(
                "threads = {threads}: a partitioned network records no transmit times, \
                 captures or queue samples"
            )));
        }
        let par = Parallel::new(&self.net, threads, self.partitions, force)?;
        self.single_loop_note = None;
        if !force && par.partitions() == 1 {
            self.par = None;
            let why = if self.partitions == 1 {
                "partitions = 1"
            } else {
                "no link with a latency separates its parts"
            };
            self.single_loop_note = Some(format!(
                "threads = {threads}: the network is one partition ({why}); the single event \
                 loop runs it, on 1 thread"
            ));
        } else if !force && par.lookahead() < MIN_THREADED_LOOKAHEAD {
            self.par = None;
            self.single_loop_note = Some(format!(
                "threads = {threads}: {} partitions would exchange frames every {} ns (the \
                 lookahead), too often for threads to pay (from {} ns); the single event loop \
                 runs the network, on 1 thread, whatever the thread count",
                par.partitions(),
                par.lookahead().0 / 1_000_000,
                MIN_THREADED_LOOKAHEAD.0 / 1_000_000,
            ));
        } else {
            self.par = Some(Box::new(par));
        }
        Ok(())
    }

    /// The partitions and lookahead of the partitioned simulation, if on.
    pub fn partitioning(&self) -> Option<(usize, SimDuration)> {
        self.par.as_ref().map(|p| (p.partitions(), p.lookahead()))
    }
}
