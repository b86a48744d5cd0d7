//! How a network is cut into partitions: which partition owns each host
//! and switch (see the module documentation of [`super`]).

use nanopu_network::{Endpoint, Network};
use std::ops::Range;

/// Which partition owns each host and switch.
pub(super) struct Layout {
    pub(super) host: Vec<u16>,
    pub(super) switch: Vec<u16>,
}

impl Layout {
    pub(super) fn of(&self, e: Endpoint) -> u16 {
        match e {
            Endpoint::Host(h) => self.host[h],
            Endpoint::Switch(s) => self.switch[s],
        }
    }
}

/// The partitions of `net` and their host ranges (see the module
/// documentation): leaves in at most `max_groups` groups, spines too; one
/// partition if `max_groups` is 1 or the hosts are not numbered switch by
/// switch.
pub(super) fn partitions(net: &Network, max_groups: usize) -> (Layout, Vec<Range<usize>>) {
    let max_groups = max_groups.max(1);
    let (n, switches) = (net.hosts(), net.switches());
    let one = || {
        (
            Layout {
                host: vec![0; n],
                switch: vec![0; switches],
            },
            std::iter::once(0..n).collect(),
        )
    };
    if switches == 0 || max_groups == 1 {
        return one();
    }
    let attached: Vec<usize> = (0..n).filter_map(|h| net.host_switch(h)).collect();
    if attached.len() != n {
        return one();
    }
    let mut layout = Layout {
        host: vec![0; n],
        switch: vec![u16::MAX; switches],
    };
    let mut ranges = Vec::new();
    if attached.iter().all(|&s| s == attached[0]) {
        // One switch with every host: hosts in groups, the switch apart
        // (below).
        let per = n.div_ceil(max_groups).max(1);
        for start in (0..n).step_by(per) {
            let end = (start + per).min(n);
            for h in start..end {
                layout.host[h] = ranges.len() as u16;
            }
            ranges.push(start..end);
        }
    } else {
        // The switches with hosts (leaves), each with its hosts, which must
        // come switch by switch.
        let mut leaves: Vec<(usize, Range<usize>)> = Vec::new();
        let mut seen = vec![false; switches];
        let mut h = 0;
        while h < n {
            let s = attached[h];
            if std::mem::replace(&mut seen[s], true) {
                return one();
            }
            let start = h;
            while h < n && attached[h] == s {
                h += 1;
            }
            leaves.push((s, start..h));
        }
        // Consecutive leaves in at most `max_groups` groups, each group one
        // partition with its leaves' hosts.
        let per = leaves.len().div_ceil(max_groups);
        for group in leaves.chunks(per) {
            let id = ranges.len() as u16;
            for (s, hosts) in group {
                layout.switch[*s] = id;
                for h in hosts.clone() {
                    layout.host[h] = id;
                }
            }
            ranges.push(group[0].1.start..group[group.len() - 1].1.end);
        }
    }
    // The switches not in a partition yet (spines; a single switch)
    // likewise, in at most `max_groups` groups of their own: a leaf then
    // waits for the spines' clocks only, and they for the leaves', so a leaf
    // may run up to two lookaheads ahead of another (a spine in a leaf's
    // partition ties that leaf to every other leaf's clock: leaf-spine-64
    // ran ~6 % slower on two threads so).
    let spines: Vec<usize> = (0..switches)
        .filter(|&s| layout.switch[s] == u16::MAX)
        .collect();
    if !spines.is_empty() {
        let per = spines.len().div_ceil(max_groups);
        for group in spines.chunks(per) {
            let id = ranges.len() as u16;
            for &s in group {
                layout.switch[s] = id;
            }
            ranges.push(n..n);
        }
    }
    (layout, ranges)
}
