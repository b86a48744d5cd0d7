/* hello: the smallest SDK program.  Prints one line from hart 0 and exits 0. */
#include <nanopu.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    printf("Hello from hart %lu of %d\n", nanopu_hartid(), nanopu_ncores);
    if (argc > 0)
        printf("argc = %d, argv[0] = %s\n", argc, argv[0]);
    return 0;
}
