/* trace.c — a priced plan as a Chrome trace (the trace-event JSON that
 * Perfetto and chrome://tracing open): a track per compute unit, per
 * memory level and for the fusion groups; a slice per Einsum on its unit,
 * per Einsum's transfer at each level (as long as the level takes to move
 * its bytes), per group; the figures as the slices' arguments. Times are
 * microseconds from the layer's start, as the model's timeline has them. */
#include "report.h"

#include <math.h>

enum { PID = 1 };

static json_t *slice(const char *name, const char *cat, double ts_us,
                     double dur_us, int tid, json_t *args) {
  json_t *e = json_object();
  json_object_set_new(e, "name", json_string(name));
  json_object_set_new(e, "cat", json_string(cat));
  json_object_set_new(e, "ph", json_string("X"));
  json_object_set_new(e, "ts", json_real(ts_us));
  json_object_set_new(e, "dur", json_real(dur_us));
  json_object_set_new(e, "pid", json_integer(PID));
  json_object_set_new(e, "tid", json_integer(tid));
  json_object_set_new(e, "args", args);
  return e;
}

static json_t *track_name(int tid, const char *name) {
  json_t *e = json_object();
  json_object_set_new(e, "name", json_string("thread_name"));
  json_object_set_new(e, "ph", json_string("M"));
  json_object_set_new(e, "pid", json_integer(PID));
  json_object_set_new(e, "tid", json_integer(tid));
  json_t *args = json_object();
  json_object_set_new(args, "name", json_string(name));
  json_object_set_new(e, "args", args);
  return e;
}

/* The tracks: units 1.., levels after them, the groups last. */
static int unit_tid(int u) { return 1 + u; }
static int level_tid(const Arch *a, int l) { return 1 + a->nunits + l; }
static int group_tid(const Arch *a) { return 1 + a->nunits + a->nlevels; }

static void einsum_slices(json_t *ev_list, const Cascade *c, const Arch *a,
                          const Eval *ev, double us) {
  for (int i = 0; i < ev->n; i++) {
    const EinsumEval *r = &ev->e[i];
    const char *name = einsum_name(c, r->einsum);
    json_t *args = json_object();
    json_object_set_new(args, "group", json_integer(r->group + 1));
    json_object_set_new(args, "ops", report_real(r->work.total));
    json_object_set_new(args, "dram_read_bytes", report_real(r->read));
    json_object_set_new(args, "dram_write_bytes", report_real(r->write));
    json_object_set_new(args, "bound", json_string(
        r->bound < 0 ? "compute" : a->levels[r->bound].name));
    json_object_set_new(args, "mapping", json_string(r->mapping));
    json_array_append_new(ev_list, slice(name, "einsum", r->start * us,
                                         (r->end - r->start) * us,
                                         unit_tid(r->unit), args));
    for (int l = 0; l < a->nlevels; l++) {
      const LevelUse *u = &ev->use[(size_t)i * (size_t)a->nlevels + l];
      if (u->read + u->write <= 0)
        continue;
      json_t *la = json_object();
      json_object_set_new(la, "read_bytes", report_real(u->read));
      json_object_set_new(la, "write_bytes", report_real(u->write));
      json_object_set_new(la, "energy_pj", report_real(u->energy_pj));
      json_array_append_new(ev_list, slice(name, "transfer", r->start * us,
                                           u->cycles * us, level_tid(a, l),
                                           la));
    }
  }
}

json_t *report_trace_json(const Cascade *c, const Arch *a, const Eval *ev) {
  double us = 1e6 / a->clock_hz; /* a cycle, in microseconds */
  json_t *list = json_array();
  json_t *proc = json_object();
  json_object_set_new(proc, "name", json_string("process_name"));
  json_object_set_new(proc, "ph", json_string("M"));
  json_object_set_new(proc, "pid", json_integer(PID));
  json_t *pa = json_object();
  char title[160];
  snprintf(title, sizeof title, "%s on %s", ev->label, a->name);
  json_object_set_new(pa, "name", json_string(title));
  json_object_set_new(proc, "args", pa);
  json_array_append_new(list, proc);
  for (int u = 0; u < a->nunits; u++)
    json_array_append_new(list, track_name(unit_tid(u), a->units[u].name));
  for (int l = 0; l < a->nlevels; l++)
    json_array_append_new(list,
                          track_name(level_tid(a, l), a->levels[l].name));
  json_array_append_new(list, track_name(group_tid(a), "fusion groups"));
  for (int g = 0; g < ev->ngroups; g++) {
    const GroupEval *ge = &ev->g[g];
    char name[32];
    snprintf(name, sizeof name, "G%d", g + 1);
    json_t *args = json_object();
    json_object_set_new(args, "einsums", json_integer(ge->n));
    json_object_set_new(args, "memory_us", report_real(ge->mem_cycles * us));
    json_array_append_new(list, slice(name, "group", ge->start * us,
                                      (ge->end - ge->start) * us,
                                      group_tid(a), args));
  }
  einsum_slices(list, c, a, ev, us);
  json_t *root = json_object();
  json_object_set_new(root, "traceEvents", list);
  json_object_set_new(root, "displayTimeUnit", json_string("ns"));
  json_t *meta = json_object();
  json_object_set_new(meta, "latency_us", report_real(ev->seconds * 1e6));
  json_object_set_new(meta, "design", json_string(ev->label));
  json_object_set_new(root, "metadata", meta);
  return root;
}
