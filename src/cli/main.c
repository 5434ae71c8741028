/* main.c - the rltune command (sub-commands are added as modules land). */
#include <stdio.h>

#include "rltune.h"

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("rltune %s\n", RLTUNE_VERSION);
    return 0;
}
