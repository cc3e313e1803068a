/* MODEL_OPTIONS (model.h): the defaults docs/model.md states, the unset
 * overrides changing nothing, each option set and read back through the
 * table, and the names JSON and a study use. */
#include "test.h"

#include "../../src/model/model.h"

/* The sanitizer build is where the stages' hand-off assertions (eval.c,
 * mapper.c, fused.c, net/run.c) are checked: never without them. */
#if defined(__SANITIZE_ADDRESS__) && defined(NDEBUG)
#error "the ASan build must keep assert() (no NDEBUG)"
#endif

TEST(options_defaults_as_documented) {
  ModelOpts full = model_default_opts(DES_FULL);
  CHECK_INT(full.compose, COMPOSE_SEQUENTIAL);
  CHECK_INT(full.accounting, ACCOUNT_ACHIEVED);
  CHECK_INT(full.stitch, STITCH_GREEDY);
  CHECK_INT(full.bind, BIND_RULE);
  CHECK(!full.state_io && !full.no_overlap);
  CHECK_NEAR(full.reserve_share, 0.75, 0);
  CHECK_NEAR(full.weight_share, 0.5, 0);
  CHECK(full.two_pass && full.rd_partials);
  CHECK_INT(full.spill_distance, 12);
  /* FLAT holds whole rows: no partial products; its row's baseline stays */
  ModelOpts flat = model_default_opts(DES_FLAT);
  CHECK(!flat.rd_partials && flat.two_pass);
  CHECK(flat.bind_alone && flat.plan == PLAN_ATTENTION);
}

TEST(options_unset_change_nothing) {
  ModelOverrides none = model_no_overrides();
  for (int d = 0; d < DES_COUNT; d++) {
    ModelOpts a = model_default_opts((Design)d);
    ModelOpts b = model_opts_with(&none, (Design)d);
    for (int k = 0; k < MO_COUNT; k++) {
      CHECK_NEAR(model_opt_value(&a, (ModelOption)k),
                 model_opt_value(&b, (ModelOption)k), 0);
      CHECK(isnan(model_override_value(&none, (ModelOption)k)));
    }
  }
}

TEST(options_set_and_read_back) {
  ModelOverrides o = model_no_overrides();
  model_override_set(&o, MO_pipelined, 1);
  model_override_set(&o, MO_ideal, 1);
  model_override_set(&o, MO_two_pass, 0);
  model_override_set(&o, MO_spill_distance, 3);
  model_override_set(&o, MO_bind, BIND_COST);
  model_override_set(&o, MO_weight_share, 0.25);
  CHECK_INT(o.pipelined, 1);
  CHECK_INT(o.spill_distance, 3);
  CHECK_NEAR(o.weight_share, 0.25, 0);
  CHECK(isnan(model_override_value(&o, MO_reserve_share)));
  CHECK_NEAR(model_override_value(&o, MO_two_pass), 0, 0);
  ModelOpts m = model_opts_with(&o, DES_RI);
  CHECK_INT(m.compose, COMPOSE_PIPELINED);
  CHECK_INT(m.accounting, ACCOUNT_IDEAL);
  CHECK(!m.two_pass && m.rd_partials);
  CHECK_INT(m.spill_distance, 3);
  CHECK_INT(m.bind, BIND_COST);
  CHECK_NEAR(m.weight_share, 0.25, 0);
  CHECK_NEAR(m.reserve_share, 0.75, 0);
  /* NAN unsets again */
  model_override_set(&o, MO_spill_distance, NAN);
  CHECK_INT(o.spill_distance, -1);
}

TEST(options_names) {
  CHECK_STR(model_option_info[MO_pipelined].name, "pipelined");
  CHECK_STR(model_option_info[MO_pipelined].field, "compose");
  CHECK_STR(model_option_value_name(MO_pipelined, 1), "pipelined");
  CHECK_STR(model_option_value_name(MO_ideal, 0), "achieved");
  CHECK_STR(model_option_value_name(MO_bind, BIND_COST), "cost");
  CHECK_STR(model_option_value_name(MO_stitch, STITCH_ALG1), "alg1");
  CHECK(model_option_value_name(MO_two_pass, 1) == NULL);
  CHECK(model_option_value_name(MO_bind, BIND_COUNT) == NULL);
  CHECK(!model_option_info[MO_stitch].sweep);
  CHECK(model_option_info[MO_spill_distance].sweep);
  CHECK_INT(model_option_info[MO_spill_distance].kind, MOK_INT);
}
