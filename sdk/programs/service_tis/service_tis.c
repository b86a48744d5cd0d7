/*
 * service_tis: the timer-interrupt scheduling baseline (TIS, nanoPU §5.2.2): a 5 us CLINT timer swaps in the highest-priority thread with a message.
 * Two threads on core 0, run by the nanokernel: context 0 at priority 0 and
 * context 1 at priority 1, each serving service-time requests
 * (service.h). Never exits: it is driven by the simulator's NIC.
 */
#include <nanokernel.h>
#include <service.h>

static uint64_t stacks[2][1024] __attribute__((aligned(16)));

int main(void)
{
    if (nk_thread_create(0, 0, service_thread, 0, NK_STACK_TOP(stacks[0])) < 0 ||
        nk_thread_create(1, 1, service_thread, 0, NK_STACK_TOP(stacks[1])) < 0)
        return 3;
    lnic_boot();
    nk_start_timer(5);
}
