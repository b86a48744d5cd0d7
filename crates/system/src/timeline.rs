//! `--timeline`: attaches one [`Timeline`] to every model of a run that
//! has probes: each nanoPU NIC (its stages, its cores' contexts and thread
//! schedulers) and the network (switch ports, host links). Processes are
//! hosts (`host_pid`) and switches (`switch_pid`).

use crate::cluster::Cluster;
use crate::host::Host;
use crate::nics::NodeNic;
use nanopu_timeline::{host_pid, Timeline};

/// Records `cluster`'s run into `timeline` (write it with
/// [`Timeline::finish`] after the run).
pub fn attach(cluster: &mut Cluster, timeline: &Timeline) {
    for h in 0..cluster.hosts() {
        let pid = host_pid(h);
        let what = match cluster.host_mut(h) {
            Host::Node(n) => match &mut n.nic {
                NodeNic::Nanopu(w) => {
                    w.nic.set_timeline(Some((timeline, pid)));
                    n.node.keep_hts_notes(true);
                    "nanoPU node"
                }
                NodeNic::Icenic(_) => "IceNIC node (no probes)",
                NodeNic::Nebula(_) => "NEBULA node (no probes)",
                NodeNic::Rdma(_) => "RDMA NIC node (no probes)",
                NodeNic::Custom(_) => "node (no probes)",
            },
            Host::Builtin(_) => "built-in host",
            Host::Client(_) => "load generator",
        };
        timeline.process(pid, &format!("host {h}: {what}"));
    }
    cluster.network_mut().set_timeline(Some(timeline.clone()));
}
