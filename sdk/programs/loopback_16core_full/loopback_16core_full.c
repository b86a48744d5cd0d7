/*
 * loopback_16core_full: loopback_16core with all 16 cores serving. Built
 * against the runtime copy with NANOPU_MAX_HARTS = 16 (see
 * programs/nb_mica/program.mk), so every hart gets a stack; the SDK's other
 * programs keep the limit of 8 and their memory layout. The second node
 * benchmark of `nanopu bench` (node16-full).
 */
#include "../loopback_16core/loopback_16core.c"
