//! A traditional DMA NIC (IceNIC) as a [`NicDesign`]. The NIC itself is a
//! device on the node's bus ([`device`]: the cores post descriptors by MMIO
//! and poll its completion counts, and it moves frames by DMA through the
//! node's memory), with its parameters ([`params`], `[node.icenic]`). This
//! module is its wire side: the MAC and serial I/O in front of it (the same
//! as the nanoPU NIC's, so the two designs differ only behind the MAC).
//!
//! It is also the worked example of `docs/adding-a-nic.md`.

pub mod device;
pub mod params;

pub use device::{IceNic, IceNicStats, RxPlacement, ICENIC_BASE, ICENIC_SIZE};
pub use params::{IceNicConfig, IceNicConfigError};

use crate::mac::Mac;
use crate::{frame_dst_ip, Cores, NicDesign, NicIo, NicNote};
use nanopu_node::{CoreOutput, Node, OverlapError};
use nanopu_sim::SimTime;
use serde::Serialize;

/// The IceNIC's wire side.
pub struct IceNicPort {
    mac: Mac,
    /// The device's parameters, for [`NicDesign::attach`].
    params: IceNicConfig,
    stats: IceNicPortStats,
}

/// The IceNIC has no timed events of its own: DMA completions are stamped
/// with the core cycle they complete at, and the cores read them then.
#[derive(Debug)]
pub enum IceNicEvent {}

/// Counters of the wire side (the device's own are in [`IceNicStats`]).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct IceNicPortStats {
    pub rx_frames: u64,
    /// Frames the device dropped (no receive buffer posted).
    pub rx_dropped: u64,
    pub tx_frames: u64,
    /// Messages the cores wrote to netTX, which this NIC has no path for.
    pub register_file_messages_ignored: u64,
}

impl IceNicPort {
    /// The wire side `mac`, for a device with the parameters `params`.
    pub fn new(mac: Mac, params: IceNicConfig) -> IceNicPort {
        IceNicPort {
            mac,
            params,
            stats: IceNicPortStats::default(),
        }
    }
}

impl NicDesign for IceNicPort {
    type Event = IceNicEvent;

    /// The IceNIC's registers, at `[node.devices] icenic` (default
    /// [`ICENIC_BASE`]), with the parameters of `[node.icenic]`.
    fn attach(&self, node: &mut Node) -> Result<(), OverlapError> {
        let base = node.cfg().devices.base("icenic", ICENIC_BASE);
        let device = IceNic::new(self.params.clone());
        node.attach_device("icenic", base, ICENIC_SIZE, device)
    }

    fn frame_in(
        &mut self,
        frame: &[u8],
        first_bit: SimTime,
        cores: &mut Cores<'_>,
        _io: &mut NicIo<IceNicEvent>,
    ) {
        self.stats.rx_frames += 1;
        let in_nic = self.mac.received(first_bit, frame.len());
        let cycle = cores.cycle_at(in_nic);
        let accepted = cores
            .node
            .with_device_dma(|nic: &mut IceNic, dma| nic.frame_in(frame, cycle, dma));
        if accepted != Some(true) {
            self.stats.rx_dropped += 1;
        }
    }

    fn take_from_cores(&mut self, cores: &mut Cores<'_>, io: &mut NicIo<IceNicEvent>) {
        // Most calls find no frame: looking first through the shared
        // accessor keeps the sleepers' wake memos (`Node::device_mut` drops them).
        while let Some((frame, ready)) = match cores.node.device::<IceNic>() {
            Some(nic) if nic.has_tx() => {
                cores.node.device_mut::<IceNic>().and_then(IceNic::take_tx)
            }
            _ => None,
        } {
            let ready = self.mac.transmit_ready(cores.time_of(ready));
            if frame_dst_ip(&frame) == 0 {
                io.note(NicNote::Booted { at: ready });
                if !io.boot_on_wire {
                    continue;
                }
            }
            self.stats.tx_frames += 1;
            io.transmit(frame, ready);
        }
        let ignored = &mut self.stats.register_file_messages_ignored;
        cores.node.take_core_output(|_, out| {
            if let CoreOutput::Message { .. } = out {
                *ignored += 1;
            }
        });
    }

    fn handle(
        &mut self,
        event: IceNicEvent,
        _now: SimTime,
        _cores: &mut Cores<'_>,
        _io: &mut NicIo<IceNicEvent>,
    ) {
        match event {}
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::to_value(self.stats).expect("counters serialize")
    }

    /// The wire side's counters, and the device's under `device`.
    fn stats_on(&self, node: &Node) -> serde_json::Value {
        let mut v = self.stats();
        if let Some(dev) = node.device::<IceNic>() {
            v["device"] = serde_json::to_value(&dev.stats).expect("counters serialize");
        }
        v
    }
}
