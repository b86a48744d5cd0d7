//! Which memory system below the L2 an experiment's nodes have when the
//! configuration chooses none (issue #49): the nanoPU paper's experiments
//! run on what its FireSim runs had, the comparisons measured on hardware of
//! their own keep the configuration's.

use crate::{Experiment, Result, Runner};
use nanopu_node::config::{MemoryPreset, NodeConfig};
use nanopu_node::memory::dram_timing::DramModel;
use nanopu_report::ExperimentResult;

/// The memory system below the L2 of an experiment's nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// The nanoPU prototype's (`[node.memory] preset = "firesim-lnic"`:
    /// FASED's LLC model in front of its DDR3 FR-FCFS model), unless the
    /// configuration chooses a memory system: the experiments the nanoPU
    /// paper measured on its FireSim runs.
    Prototype,
    /// The configuration's (the fluid model unless it says otherwise): the
    /// systems their papers measured on other hardware (G-Opt's and eRPC's
    /// Xeons, the ConnectX RDMA NICs, NEBULA's simulator), and the network
    /// experiments, whose nodes' memory is not what they measure.
    AsConfigured,
}

/// Whether `node` chooses a memory system below the L2: a preset, the
/// banked DRAM model, or FASED's LLC model.
pub fn chooses_memory(node: &NodeConfig) -> bool {
    node.memory.preset.is_some() || node.dram.model != DramModel::Fluid || node.fased_llc.enabled
}

impl Experiment {
    /// Runs the experiment on `runner`, its nodes with the memory system
    /// [`Experiment::memory`] gives them; the result's notes say which.
    /// Every way of running an experiment (the CLI, `nanopu reproduce`,
    /// Python) goes through here.
    pub fn run_on(&self, runner: &Runner) -> Result<ExperimentResult> {
        let given = chooses_memory(&runner.cfg.node);
        let note = match (self.memory, given) {
            (Memory::Prototype, false) => {
                let mut r = runner.clone();
                r.cfg.node.memory.preset = Some(MemoryPreset::FiresimLnic);
                return (self.run)(&r).map(|mut result| {
                    result.notes.push(
                        "Memory below the L2: the prototype's FireSim runs' (`[node.memory] preset \
                         = \"firesim-lnic\"`: FASED's LLC model and its DDR3 FR-FCFS model, \
                         `docs/memory.md`), since the configuration chooses none. The \
                         `memory-systems` experiment shows the applications under a real \
                         DDR4-3200 and the fluid model beside it."
                            .into(),
                    );
                    result
                });
            }
            (Memory::Prototype, true) => {
                "Memory below the L2: the configuration's (it chooses one; without it this \
                 experiment runs on the prototype's, `firesim-lnic`)."
            }
            (Memory::AsConfigured, false) => {
                "Memory below the L2: the fluid model (`docs/memory.md`): this experiment \
                 does not model the nanoPU prototype's memory system."
            }
            (Memory::AsConfigured, true) => "Memory below the L2: the configuration's.",
        };
        (self.run)(runner).map(|mut result| {
            result.notes.push(note.into());
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanopu_system::Config;

    #[test]
    fn a_configuration_chooses_memory_by_preset_model_or_llc() {
        let plain = Config::default();
        assert!(!chooses_memory(&plain.node));
        for text in [
            "[node.memory]\npreset = \"fluid\"\n",
            "[node.dram]\nmodel = \"banked\"\n",
            "[node.fased_llc]\nenabled = true\n",
        ] {
            let cfg = Config::parse(text).unwrap();
            assert!(chooses_memory(&cfg.node), "{text}");
        }
        // Other memory settings (a latency, the L2) do not choose a system.
        let cfg = Config::parse("[node]\ndram_latency_ns = 90\n").unwrap();
        assert!(!chooses_memory(&cfg.node));
    }

    /// An experiment that reports the memory preset its runner gives it.
    fn probe(r: &Runner) -> Result<ExperimentResult> {
        Ok(ExperimentResult {
            description: format!("{:?}", r.cfg.node.memory.preset),
            ..ExperimentResult::default()
        })
    }

    fn probe_experiment(memory: Memory) -> Experiment {
        Experiment {
            id: "probe",
            title: "probe",
            run: probe,
            fixed: crate::Fixed::NONE,
            memory,
        }
    }

    #[test]
    fn prototype_experiments_get_the_prototype_s_memory_unless_configured() {
        let runner = |text: &str| {
            let cfg = Config::parse(text).unwrap();
            Runner::new(cfg, crate::Scale::Quick, Some(1), 1)
        };
        let seen = |m: Memory, text: &str| {
            let r = probe_experiment(m).run_on(&runner(text)).unwrap();
            (r.description, r.notes.join(" "))
        };
        let (preset, note) = seen(Memory::Prototype, "");
        assert_eq!(preset, "Some(FiresimLnic)");
        assert!(note.contains("firesim-lnic"), "{note}");
        let (preset, note) = seen(Memory::Prototype, "[node.memory]\npreset = \"ddr4-3200\"\n");
        assert_eq!(preset, "Some(Ddr43200)");
        assert!(note.contains("the configuration's"), "{note}");
        let (preset, note) = seen(Memory::AsConfigured, "");
        assert_eq!(preset, "None");
        assert!(note.contains("fluid"), "{note}");
    }

    #[test]
    fn the_nanopu_paper_s_experiments_run_on_the_prototype_s_memory() {
        let all = crate::all();
        let memory = |id: &str| all.iter().find(|e| e.id == id).expect(id).memory;
        for id in [
            "w2w-8B",
            "hts-vs-tis",
            "jbsq-vs-rss",
            "mica",
            "setalg",
            "hdsearch",
            "classifier",
            "chain",
        ] {
            assert_eq!(memory(id), Memory::Prototype, "{id}");
        }
        // Systems their papers measured on other hardware keep the configuration's.
        for id in [
            "gopt",
            "erpc",
            "herd",
            "one-sided",
            "nb-mica",
            "rdma",
            "memory-systems",
        ] {
            assert_eq!(memory(id), Memory::AsConfigured, "{id}");
        }
    }
}
