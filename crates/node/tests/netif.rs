//! The register-file network interface driven by a test harness that fills
//! RX FIFOs and drains TX FIFOs directly (the NIC is not involved).

mod common;

use common::*;
use nanopu_node::{HartState, NodeError, RunEnd};

/// Loopback: wait for a message, copy header and payload words back.
fn loopback() -> String {
    format!(
        "{REGISTER_CONTEXT_0}\
wait:
    csrr a5, 0x052
    bnez a5, copy
    csrwi 0x056, 2
    j wait
copy:
    mv x31, x30            # header: the reply goes back to the sender
    andi a4, x31, 0x7ff    # length in bytes, from the header just written
    addi a4, a4, 7
    srli a4, a4, 3
1:  beqz a4, done
    mv x31, x30
    addi a4, a4, -1
    j 1b
done:
    csrwi 0x056, 1
    j wait
"
    )
}

fn header(len: u64) -> u64 {
    (0x0a00_0001 << 32) | (7 << 16) | len
}

#[test]
fn loopback_echoes_messages_of_every_size() {
    let mut node = asm_node("loopback", &loopback(), 1);
    assert_eq!(node.run(10_000).unwrap(), RunEnd::Limit);
    assert!(
        matches!(node.hart_state(0), HartState::Poll { .. }),
        "idle in its poll loop"
    );
    for len in [8u64, 16, 100, 1024, 2048] {
        let words = len.div_ceil(8);
        let mut msg = vec![header(len)];
        msg.extend((0..words).map(|i| i * 0x0101 + len));
        node.deliver_to_core(0, 0, &msg, 0).unwrap();
        let now = node.cycle(0);
        assert_eq!(node.run(now + 20_000).unwrap(), RunEnd::Limit);
        let reply = node.pop_sent().expect("a reply");
        assert_eq!(reply.words, msg, "reply to {len} B");
        assert_eq!(reply.context, 0);
        assert!(node.sent().messages.is_empty());
    }
}

#[test]
fn empty_netrx_stalls_until_a_word_arrives() {
    let body = format!("{REGISTER_CONTEXT_0}    mv a0, x30\n{}", exit_with("a0"));
    let mut node = asm_node("stall", &body, 1);
    assert_eq!(node.run(1_000_000).unwrap(), RunEnd::Limit);
    assert_eq!(node.hart_state(0), HartState::RxEmpty);
    let stalled_at = node.hart(0).instret();
    node.deliver_to_core(0, 0, &[42], 0).unwrap();
    assert_eq!(node.run(2_000_000).unwrap(), RunEnd::Exited(42));
    assert!(node.hart(0).instret() > stalled_at);
}

#[test]
fn netrx_with_nothing_to_come_is_a_deadlock_not_a_hang() {
    let body = format!("{REGISTER_CONTEXT_0}    mv a0, x30\n{}", exit_with("a0"));
    let mut node = asm_node("deadlock", &body, 1);
    match node.run(u64::MAX) {
        Err(NodeError::Deadlock(msg)) => assert!(msg.contains("netRX"), "{msg}"),
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

/// A trap handler that exits with mcause as the exit code.
fn exit_with_mcause() -> String {
    format!(
        "    la a0, handler\n    csrw mtvec, a0\n    j main\n    .align 2\nhandler:\n    csrr a0, mcause\n{}main:\n",
        exit_with("a0")
    )
}

#[test]
fn tx_header_larger_than_the_buffer_raises_the_exception() {
    let body = format!(
        "{}{REGISTER_CONTEXT_0}    li x31, 4096\n    li a0, 0\n{}",
        exit_with_mcause(),
        exit_with("a0")
    );
    let mut node = asm_node("toolarge", &body, 1);
    assert_eq!(node.run(1_000_000).unwrap(), RunEnd::Exited(24));
}

#[test]
fn without_a_registered_context_x30_is_an_ordinary_register() {
    // What the RISC-V ISA tests (and any code using t5/t6) rely on.
    let body = format!(
        "    li x31, 7\n    li x30, 5\n    add a0, x30, x31\n{}",
        exit_with("a0")
    );
    let mut node = asm_node("plainregs", &body, 1);
    assert_eq!(node.run(1_000_000).unwrap(), RunEnd::Exited(12));
    // The write to x31 sent a one-word message (header 7: 7 bytes announced,
    // never completed) through the unbound FIFO; nothing was received.
    assert!(node.sent().messages.is_empty());
    assert_eq!(node.netif(0).tx_messages, 0);
}

#[test]
fn a_boot_message_before_registration_is_sent() {
    // The prototype's programs announce readiness before registering.
    let body = format!(
        "    li x31, 16\n    li x31, 0\n    li x31, 0\n{REGISTER_CONTEXT_0}    li a0, 0\n{}",
        exit_with("a0")
    );
    let mut node = asm_node("boot", &body, 1);
    assert_eq!(node.run(1_000_000).unwrap(), RunEnd::Exited(0));
    assert_eq!(node.sent().count, 1);
    assert_eq!(node.sent().messages[0].words, vec![16, 0, 0]);
}

#[test]
fn a_trapping_instruction_does_not_lose_its_netrx_word() {
    // `ld a0, 0(x30)` pops the word 8 as its base address: an access fault.
    // The handler reads netRX again and must see the same word.
    let body = format!(
        "    la a0, handler\n    csrw mtvec, a0\n{REGISTER_CONTEXT_0}    ld a0, 0(x30)\n    li a0, 0\n{}\
    .align 2\nhandler:\n    mv a0, x30\n{}",
        exit_with("a0"),
        exit_with("a0")
    );
    let mut node = asm_node("nolose", &body, 1);
    assert_eq!(node.run(10_000).unwrap(), RunEnd::Limit);
    node.deliver_to_core(0, 0, &[8], 0).unwrap();
    assert_eq!(node.run(1_000_000).unwrap(), RunEnd::Exited(8));
}

#[test]
fn one_instruction_pops_once_and_pushes_once() {
    // add x31, x30, x30: one word popped, used for both operands.
    let body = format!("{REGISTER_CONTEXT_0}    li x31, 16\n    add x31, x30, x30\n    mv x31, x30\n    mv a0, x0\n{}", exit_with("a0"));
    let mut node = asm_node("popone", &body, 1);
    assert_eq!(node.run(10_000).unwrap(), RunEnd::Limit);
    node.deliver_to_core(0, 0, &[5, 9], 0).unwrap();
    assert_eq!(node.run(1_000_000).unwrap(), RunEnd::Exited(0));
    assert_eq!(node.sent().messages[0].words, vec![16, 10, 9]);
}
