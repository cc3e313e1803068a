/* util.h — the few things every module needs: source locations and
 * diagnostics, an arena that owns a whole data structure, growable arrays,
 * small string helpers, checked size arithmetic, and the one way to read
 * an input file (input.c) and to write an output file (output.c).
 *
 * Nothing here is global or mutable: a Diag is passed down by the caller,
 * an Arena belongs to the structure it allocates for. Two exceptions:
 * output.c's list of temporary files that exist at this moment, which a
 * SIGINT or SIGTERM handler removes (signals are process-wide), and
 * fatal.c's trap, one per thread (a longjmp can only return to its own
 * thread's stack), which mambalaya_call sets on its thread and
 * fatal_catch on the library's worker threads (the executor's pool, a
 * sweep's threads, diff's loader). */
#ifndef MAMBALAYA_UTIL_H
#define MAMBALAYA_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A position in a source file, 1-based. line == 0 means "unknown". */
typedef struct Loc {
  int line, col;
} Loc;

/* The first error met while loading or checking an input. Loaders stop at
 * the first error: its position and text are what the user sees, as
 * "FILE:LINE:COL: error: MSG". */
typedef struct Diag {
  bool failed;
  char file[512];
  Loc loc;
  char msg[1024];
} Diag;

/* Record an error unless one is already recorded (the first one wins). */
void diag_error(Diag *d, const char *file, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_verror(Diag *d, const char *file, Loc loc, const char *fmt,
                 va_list ap) __attribute__((format(printf, 4, 0)));
/* diag_error, then false: every loader's `return fail(...)` (each wraps
 * it in a macro that names its own Diag and file). */
bool diag_fail(Diag *d, const char *file, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Print "FILE:LINE:COL: error: MSG" (or "FILE: error: MSG" without a
 * line) on one line: control characters of the file name or the message
 * (a newline in a user's name) are escaped as \xNN. */
void diag_print(const Diag *d, FILE *out);

/* An arena: many small allocations, freed together. Memory is zeroed. */
typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
  ArenaBlock *head;
} Arena;

void *arena_alloc(Arena *a, size_t size);
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
void arena_free(Arena *a);

/* ---- fatal errors (fatal.c) ----
 *
 * A failure after which a run cannot go on (memory running out where no
 * input asked for it, a drawing library's error): MSG on stderr, the
 * temporaries removed, then exit status 1 — or, in a thread where a trap
 * is set, a longjmp to it with MSG in the trap, so that a host running
 * commands in process (mambalaya_call) gets status 1 and lives. What the
 * run had allocated is not freed then (it has no owner left). */
typedef struct FatalTrap {
  jmp_buf env;
  char msg[256]; /* fatal's MSG, for the trap's owner to report */
} FatalTrap;
/* Set T as this thread's trap (NULL: none); the previous one. */
FatalTrap *fatal_trap(FatalTrap *t);
_Noreturn void fatal(const char *msg);

/* A worker thread cannot longjmp to the caller's trap (it is on another
 * stack), nor end the process (a host would die with it). So every
 * thread the library starts runs its work through fatal_catch: a fatal
 * error ends that work, its message is kept in the FatalRecord the
 * threads of one job share, the other threads see fatal_failed and stop,
 * and the thread that started them, once they have all stopped (nothing
 * runs on its stack any more), ends its own run with fatal_rethrow. The
 * starting thread runs its own share through fatal_catch too, so that it
 * never unwinds while workers still run. */
typedef struct FatalRecord {
  _Atomic int state; /* 0 none, 1 being written, 2 MSG written */
  char msg[256];
} FatalRecord;
/* Run FN(ARG) under a trap; false if a fatal error ended it (the first
 * such message of all the threads sharing R is kept). */
bool fatal_catch(FatalRecord *r, void (*fn)(void *arg), void *arg);
bool fatal_failed(const FatalRecord *r); /* has any thread of R failed? */
/* If a thread of R failed: fatal(its message), on this thread. */
void fatal_rethrow(FatalRecord *r);

/* Allocation that cannot fail silently: out of memory is fatal (above):
 * a message, the temporary files of outputs removed, status 1. Sizes that come from input are checked against the memory
 * available before they are allocated (see memory_available), so this is
 * the last resort, never the way an input is refused. */
/* qsort's order of ints, ascending. */
int int_ascending(const void *a, const void *b);
/* A hash of N words (a key of a table: the mapping memo's, a nest's
 * posed problems). */
uint64_t hash_words(const uint64_t *w, int n);

void *xmalloc(size_t size);
_Noreturn void out_of_memory(size_t size); /* says so, cleans up, exits 1 */
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
char *xstrdup(const char *s);

/* LEN bytes of zeroed anonymous memory in 2 MiB pages where the kernel
 * gives them (pages.c: for what is read in long streams, the weights);
 * NULL if the system refuses. Freed by unmap_huge with the same LEN. */
void *map_huge(size_t len);
void *xmap_huge(size_t len); /* map_huge, or out of memory */
void unmap_huge(void *p, size_t len);

/* A growable array of fixed-size items, heap-allocated. */
#define VEC_PUSH(arr, n, cap, item)                                        \
  do {                                                                     \
    if ((n) == (cap)) {                                                    \
      (cap) = (cap) ? 2 * (cap) : 8;                                       \
      (arr) = xrealloc((arr), (size_t)(cap) * sizeof *(arr));              \
    }                                                                      \
    (arr)[(n)++] = (item);                                                 \
  } while (0)

/* The name of an X-macro entry X(id, name): `static const char *const
 * names[] = {LIST(NAME_ENTRY)};`, declared [] so that its _Static_assert
 * against the enum's count fails when an entry is missing. */
#define NAME_ENTRY(id, name) name,
/* The row {a, b, ...} of an X-macro entry X(id, a, b, ...): `} rows[] =
 * {LIST(TABLE_ROW)};`, a table of every field but the id. */
#define TABLE_ROW(id, ...) {__VA_ARGS__},

/* The index of the entry named NAME among the N entries of SIZE bytes at
 * ARR, each a struct whose first member is its name (const char *); -1
 * if none. A linear search: for the few dozen ranks or tensors of a
 * cascade, the hundreds of a checkpoint. */
int find_named(const void *arr, int n, size_t size, const char *name);

/* A string builder. */
typedef struct Buf {
  char *s;
  size_t len, cap;
} Buf;

/* "Did you mean": for a name refused from a closed set, the candidate
 * nearest to it by edit distance (a third of its length at most, and at
 * least 1: `fulll` -> `full`, never `ri` -> `full`); nearest.c. Offer each
 * candidate in the table's order; the first of equals wins. */
typedef struct Nearest {
  const char *got, *best;
  size_t dist;
} Nearest;
Nearest nearest_start(const char *got);
void nearest_offer(Nearest *n, const char *name);
/* "did you mean 'full'? " when one was near, else nothing. */
void buf_did_you_mean(Buf *b, const Nearest *n);
/* The same for the names of a table: the first N of NAMES, or up to a
 * NULL. */
void buf_did_you_mean_of(Buf *b, const char *got, const char *const *names,
                         int n);
bool name_is_near(const char *got, const char *name);

void buf_printf(Buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void buf_free(Buf *b);
/* Append S with control characters and DEL written as \xNN, so that a
 * name read from a file cannot move a terminal's cursor or split a line. */
void buf_escaped(Buf *b, const char *s);
/* The number of columns buf_escaped takes for S. */
size_t escaped_len(const char *s);

/* ---- numbers and sizes ---- */

/* The length of the plain decimal number at the start of S: [+-] digits
 * [. digits] [e [+-] digits], with at least one digit in the mantissa;
 * 0 if there is none. No "inf", "nan" or hex: one rule for specs,
 * architectures and the command line. */
size_t decimal_length(const char *s);
/* TEXT (blanks around it allowed) as a finite plain decimal number. */
bool parse_decimal(const char *text, double *value);

/* Overflow-checked 64-bit arithmetic: false if the result does not fit. */
static inline bool mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
static inline bool add_u64(uint64_t a, uint64_t b, uint64_t *out) {
  return !__builtin_add_overflow(a, b, out);
}
/* The element count of a shape of N dimensions into *COUNT: false if a
 * dimension is negative or exceeds MAX, or their product exceeds MAX.
 * Every dimension is checked whatever their order, so a zero does not
 * hide a huge one: [0, 2^62] is refused as [2^62, 0] is. */
bool count_elements(int n, const int64_t *dims, uint64_t max,
                    uint64_t *count);
/* "1.5 GiB", "512 B": a byte count for messages. */
void buf_bytes(Buf *b, double bytes);

/* ---- reading inputs (input.c) ---- */

/* The most bytes a text input (a spec, an architecture, config.json, a
 * token list) may have: far beyond any real one, far below memory. */
#define INPUT_TEXT_MAX ((size_t)64 << 20)

/* Read a whole input file; *LEN excludes the NUL always appended. Only a
 * regular file or a named pipe is read: a directory, a device such as
 * /dev/zero or a socket is refused (EINVAL), as is a file of more than
 * MAX bytes (EFBIG). Memory running out is ENOMEM, never an abort.
 * NULL with errno set on failure. */
char *read_file_max(const char *path, size_t max, size_t *len);
/* read_file_max without a size limit (beyond what memory holds). */
char *read_file(const char *path, size_t *len);
/* read_file_max, with a message in D naming the file: "cannot read: not
 * a regular file or a named pipe (a character device)", "cannot read: N
 * bytes, more than the limit of M", "cannot read: No such file ...". */
char *read_input(const char *path, size_t max, size_t *len, Diag *d);
/* The parse step of a loader: TEXT (LEN bytes) read from PATH, into OUT. */
typedef bool ParseText(const char *path, const char *text, size_t len,
                       void *out, Diag *d);
/* PATH read by read_input (at most INPUT_TEXT_MAX bytes) and PARSE'd into
 * OUT, the text freed after: a loader of one text file. False, with the
 * message in D, when reading or parsing fails. */
bool load_input(const char *path, ParseText *parse, void *out, Diag *d);
/* Define `T *LOAD(const char *path, Diag *d)`, load_input with
 * `T *PARSE(path, text, len, d)` as its parse step (NULL on failure): the
 * file loader of a module whose parser returns its object. */
#define INPUT_LOADER(T, LOAD, PARSE)                                          \
  static bool LOAD##_text(const char *path, const char *text, size_t len,     \
                          void *out, Diag *d) {                               \
    return (*(T **)out = PARSE(path, text, len, d)) != NULL;                  \
  }                                                                           \
  T *LOAD(const char *path, Diag *d) {                                        \
    T *x = NULL;                                                              \
    load_input(path, LOAD##_text, &x, d);                                     \
    return x;                                                                 \
  }

/* Python's json module writes Infinity, -Infinity and NaN, which JSON
 * lacks (published Hugging Face configs hold them: Mamba-2's
 * time_step_limit). A copy of TEXT (LEN bytes, NUL-terminated) where each
 * outside a string is null, padded to its width so that positions in
 * messages stay the file's (NaN, three letters, a number: 0e0); no field
 * a config loader reads takes one (pyjson.c). */
char *json_from_python(const char *text, size_t len);

/* "a directory", "a character device", "a named pipe", ...: the kind
 * of file of a stat mode, for messages. */
const char *file_kind(unsigned mode);

/* Do A and B name the same existing file (the same device and inode)? */
bool same_file(const char *a, const char *b);

/* The memory this process can count on, in bytes: MemAvailable of
 * /proc/meminfo, else the available physical pages; 0 if unknown. */
uint64_t memory_available(void);

/* ---- the inputs of a run (inputset.c) ----
 *
 * Every file a run reads: the spec, the architecture, a plan, a study,
 * each file a template or a spec includes, a checkpoint. Each is known by
 * its device and inode, so an output that names one under any spelling
 * (a symlink, ./a/../a) is found; every output of the run is checked
 * against the set (output_write, outset_protect_inputs). Owned by the
 * run; zero-initialized is empty. */
typedef struct InputFile InputFile;
typedef struct InputSet {
  InputFile *files;
  int n, cap;
} InputSet;
/* Add PATH (nothing if it does not exist, or is in the set already). */
void inputset_add(InputSet *s, const char *path);
/* The name (as added) of the input PATH is, or NULL if none; S may be
 * NULL. */
const char *inputset_find(const InputSet *s, const char *path);
int inputset_count(const InputSet *s);
const char *inputset_path(const InputSet *s, int i);
void inputset_free(InputSet *s);

/* ---- writing outputs (output.c) ----
 *
 * Every file the tool writes goes through these. A file is written into
 * a temporary in its target's directory (an anonymous O_TMPFILE where
 * the file system has them, so that even SIGKILL leaves nothing behind;
 * else a new name made with O_CREAT|O_EXCL|O_NOFOLLOW, which never
 * follows or reuses a user's file), flushed to disk (fsync), then renamed
 * over the target in one step. On any failure the temporary is removed;
 * on SIGINT, SIGTERM or SIGHUP too. A reader sees the old file or the
 * new one, never a mix; two writers of one path each leave a whole
 * file (the last rename wins). */

/* The temporaries that have a name (temps.c): listed while they do, and
 * removed on those signals or when an allocation fails. False from
 * temps_note when the list is full or PATH too long. */
bool temps_note(const char *path);
void temps_forget(const char *path);
void temps_remove_all(void);

/* What is at an output's path is never replaced by something of another
 * kind: a device, a named pipe or a socket there is refused, as is a
 * file with other names (hard links: a rename would leave them the old
 * content) and a symbolic link to nothing; a symbolic link to a regular
 * file is followed (the file it names is written, the link stays). A
 * file replaced keeps its mode (and owner, where allowed). */

/* Write PATH (its directory must exist), refusing one of the inputs IN
 * (NULL: none) and a target that must not be replaced (above): false
 * with a message in D, *REFUSED telling a refused path (a bad input)
 * from a write that failed. */
bool output_write(const char *path, const void *data, size_t len,
                  const InputSet *in, bool *refused, Diag *d);
/* output_write without inputs: false with errno set (EINVAL for a
 * refused target). */
bool write_file_atomic(const char *path, const char *data, size_t len);

/* Can PATH be written? Its directory exists and is writable, and PATH is
 * not a directory nor anything output_write refuses. False with a
 * message in D otherwise. */
bool output_check(const char *path, Diag *d);
/* Can files be written into directory DIR, creating it (and its missing
 * parents)? False with a message in D otherwise. */
bool output_dir_check(const char *dir, Diag *d);

/* A set of files that land in one directory together: each is staged as
 * it is put (written and flushed to a temporary), and only when all of
 * them are staged does commit create the directory (and its missing
 * parents) and rename them into place, one after the other. A failure
 * before the commit, or a run killed before it, leaves the directory as
 * it was (a directory the set would have created is not created). Sets
 * committed at once into one directory land one after the other (a lock
 * on the directory), never interleaved. A set holds an open file per
 * staged file and names them all during the commit: at most 256 files. */
typedef struct OutSet OutSet;
OutSet *outset_new(const char *dir);
const char *outset_dir(const OutSet *s);
/* Stage NAME (a file name, no '/') with DATA. */
bool outset_put(OutSet *s, const char *name, const void *data, size_t len,
                Diag *d);
/* Refuse to commit if one of the set's files would replace INPUT (the
 * same file): checked by outset_commit before anything is renamed. */
void outset_protect(OutSet *s, const char *input);
/* outset_protect for every file of IN. */
void outset_protect_inputs(OutSet *s, const InputSet *in);
/* Move every staged file into place. False with D set if one cannot be
 * (then none is); *REFUSED is set when the reason is the output path
 * itself (a protected input, a file where a directory must be). */
bool outset_commit(OutSet *s, bool *refused, Diag *d);
/* Free the set, removing whatever was staged and not committed. */
void outset_free(OutSet *s);

/* The SHA-256 digest of DATA as 64 lowercase hex digits (and a NUL):
 * what `sha256sum` prints, to name an input by its content. */
void sha256_hex(const void *data, size_t len, char out[65]);

/* Wall-clock seconds from a monotonic clock. */
double now_seconds(void);

/* ---- random numbers (rng.c) ---- */

/* A deterministic stream: splitmix64, normals two at a time. */
typedef struct Rng {
  uint64_t s;
  bool has_spare;
  double spare;
} Rng;
/* The stream of KEY under SEED: independent of every other key's. */
Rng rng_for(uint64_t seed, const char *key);
uint64_t rng_next(Rng *r);
double rng_uniform(Rng *r); /* in (0, 1): never 0, so log() is safe */
double rng_normal(Rng *r);  /* N(0, 1) */

#endif
