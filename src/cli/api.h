/* api.h — the whole tool in process (libmambalaya.so): one entry point
 * that runs any command as the mambalaya program would, for the Python
 * package (python/mambalaya, docs/python.md) and any other host.
 *
 * A request in (the command line after the program's name), a result out
 * (what the command would have written to stdout and stderr, and the exit
 * status of the program's table in cli.h: 0, 1 a failure while running,
 * 2 bad input). A new command or option is therefore available here
 * without new binding code. */
#ifndef MAMBALAYA_API_H
#define MAMBALAYA_API_H

#include <stddef.h>

/* Run `mambalaya ARGV[0] ... ARGV[ARGC-1]` (ARGV[0] the command: "eval")
 * in this process. *OUT and *ERR receive what it wrote to stdout and
 * stderr (NUL-terminated, *OUTLEN and *ERRLEN bytes without the NUL; free
 * them with mambalaya_free); any of the four may be NULL to drop that
 * text. Returns the exit status, or 1 when the buffers cannot be had.
 *
 * Calls are serialized (a process-wide lock): the command writes through
 * the C library's stdout and stderr, which are swapped for memory streams
 * during the call. The process's own stdout and stderr are untouched, and
 * so are its SIGINT, SIGTERM and SIGHUP handlers after the call (a signal
 * during one removes the files being staged and ends the process, as it
 * ends the program). Nothing ends the process: running out of memory
 * (or another fatal error, util.h) ends the command with status 1. */
int mambalaya_call(int argc, const char *const *argv, char **out,
                   size_t *outlen, char **err, size_t *errlen);
/* Free a buffer mambalaya_call returned (NULL: nothing). */
void mambalaya_free(void *p);

/* Does OPTION ("--design") of COMMAND ("eval") take a value? 1 if it
 * does, 0 for a flag (--json, --pipelined), -1 if COMMAND has no such
 * option: for a host that maps its own arguments onto options
 * (design=True is an error, not "--design" swallowing what follows). */
int mambalaya_option_arity(const char *command, const char *option);

/* The text of the shipped file NAME stands for under DIR ("specs",
 * "archs", "studies": mamba1, h100, arch-neighbourhood), *LEN bytes (not
 * NUL-terminated; the library's, not to be freed), or NULL when NAME is a
 * path or names no shipped file: for a host that shows or edits one. */
const char *mambalaya_shipped(const char *dir, const char *name,
                              size_t *len);

/* TEXT as a quantity ("4 MiB", "100 GB/s", "1.75 GHz": the units of an
 * architecture file, docs/architecture.md): its value in the base unit,
 * *VALUE, and that unit's symbol ("B", "B/s", "Hz"), or NULL when TEXT
 * is not one. For a host that wants numbers where a table has text. */
const char *mambalaya_quantity(const char *text, double *value);

#endif
