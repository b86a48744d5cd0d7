/* A loopback server written the way the nanoPU prototype's test programs
 * are: HTIF syscalls through a magic-memory block, UART initialisation,
 * argv from SYS_getmainvars, every core waiting for lnicrdy, the boot
 * message (header 16 and two zero words) sent before registering context 0,
 * and an echo of header plus msg_len/8 payload words. Written for the
 * simulator's compatibility test; not the prototype's file. */
#include <stdint.h>

extern volatile uint64_t tohost, fromhost;

#define read_csr(reg) ({ unsigned long __t; asm volatile ("csrr %0, " #reg : "=r"(__t)); __t; })
#define write_csr(reg, val) ({ asm volatile ("csrw " #reg ", %0" :: "rK"(val)); })

#define lnic_add_context(cid, prio) ({ write_csr(0x053, cid); write_csr(0x055, prio); write_csr(0x054, 1); })
#define lnic_msg_done() write_csr(0x056, 1)
#define lnic_wait() while (read_csr(0x052) == 0) { write_csr(0x056, 2); }
#define lnic_read() ({ uint64_t __w; asm volatile ("mv %0, x30" : "=r"(__w)); __w; })
#define lnic_copy() asm volatile ("mv x31, x30")
#define lnic_write_r(v) asm volatile ("mv x31, %0" : : "r"(v))
#define lnic_write_i(v) asm volatile ("li x31, %0" : : "i"(v))
#define lnic_boot() do { lnic_write_i(16); lnic_write_i(0); lnic_write_i(0); } while (0)

static void exit_with(uint64_t code)
{
    tohost = (code << 1) | 1;
    for (;;)
        ;
}

static uint64_t syscall(uint64_t which, uint64_t a0, uint64_t a1, uint64_t a2)
{
    static volatile uint64_t magic_mem[8] __attribute__((aligned(64)));
    magic_mem[0] = which;
    magic_mem[1] = a0;
    magic_mem[2] = a1;
    magic_mem[3] = a2;
    __sync_synchronize();
    tohost = (uintptr_t)magic_mem;
    while (fromhost == 0)
        ;
    fromhost = 0;
    __sync_synchronize();
    return magic_mem[0];
}

#define print(s) syscall(64, 1, (uintptr_t)(s), sizeof(s) - 1)

static void reg_write32(uintptr_t addr, uint32_t v)
{
    *(volatile uint32_t *)addr = v;
}

static int server(void)
{
    lnic_boot();
    lnic_add_context(0, 0);
    print("Ready!\n");
    for (;;) {
        lnic_wait();
        uint64_t app_hdr = lnic_read();
        lnic_write_r(app_hdr);
        uint16_t msg_len = (uint16_t)app_hdr;
        for (int i = 0; i < msg_len / 8; i++)
            lnic_copy();
        lnic_msg_done();
    }
    return 0;
}

static uint64_t mainvars[64];

void _init(int cid, int nc)
{
    if (cid == 0) {
        reg_write32(0x54000008, 1); /* uart txctrl: enable */
        reg_write32(0x54000018, 868); /* uart div */
        syscall(2011, (uintptr_t)mainvars, sizeof(mainvars), 0);
        if (mainvars[0] == 0 || mainvars[1] == 0) {
            print("Unable to parse program arguments.\n");
            exit_with(255);
        }
    }
    while (read_csr(0x057) == 0)
        ;
    if (nc != 4)
        exit_with(3);
    if (cid == 0)
        exit_with(server());
    for (;;)
        ;
}
