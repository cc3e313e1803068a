/* main.c — the mambalaya program: the command engine (src/cli/main.c's
 * cli_main), which libmambalaya.so also runs in process (src/cli/api.c). */
#include "cli/cli.h"

int main(int argc, char **argv) { return cli_main(argc, argv); }
