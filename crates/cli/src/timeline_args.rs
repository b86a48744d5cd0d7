//! `--timeline FILE` and its sampling options, shared by `run --load` and
//! `net` (the format and what is recorded: `nanopu_timeline`,
//! docs/timeline.md).

use anyhow::{Context, Result};
use nanopu_timeline::{parse_window, Timeline, TimelineOptions, Written};
use std::path::PathBuf;

#[derive(clap::Args, Clone, Debug, Default)]
pub struct TimelineArgs {
    /// Write a timeline of the run (Chrome trace-event JSON: open it in
    /// ui.perfetto.dev or chrome://tracing): NIC stages, core contexts,
    /// switch ports, each request's path as flow arrows.
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
    /// Trace every Nth message only (1: all).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "timeline")]
    pub timeline_sample: u32,
    /// Trace only what happens in this window of simulated time
    /// (microseconds, e.g. 100:150).
    #[arg(long, value_name = "START_US:END_US", requires = "timeline")]
    pub timeline_window: Option<String>,
}

impl TimelineArgs {
    /// The timeline asked for, its file created (so a bad path fails now,
    /// not after the run).
    pub fn open(&self) -> Result<Option<Timeline>> {
        let Some(path) = &self.timeline else {
            return Ok(None);
        };
        let mut opts = TimelineOptions::new(path);
        opts.sample_every = self.timeline_sample;
        if let Some(w) = &self.timeline_window {
            opts.window = Some(parse_window(w)?);
        }
        let tl = Timeline::new(opts)?;
        std::fs::File::create(path)
            .with_context(|| format!("--timeline: cannot write {}", path.display()))?;
        Ok(Some(tl))
    }
}

/// Writes the timeline and says so on standard error.
pub fn finish(tl: &Timeline) -> Result<Written> {
    let w = tl
        .finish()
        .with_context(|| format!("--timeline: cannot write {}", tl.path().display()))?;
    eprintln!(
        "timeline: {} events, {} request flows, {} bytes -> {}{}",
        w.events,
        w.flows,
        w.bytes,
        tl.path().display(),
        match w.dropped_records {
            0 => String::new(),
            n => format!(" ({n} records over the limit left out: sample with --timeline-sample)"),
        }
    );
    Ok(w)
}
