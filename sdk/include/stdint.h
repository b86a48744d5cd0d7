/* SDK stdint.h: GCC's freestanding <stdint.h> (no C library underneath). */
#ifndef NANOPU_STDINT_H
#define NANOPU_STDINT_H
#include "stdint-gcc.h"
#endif
