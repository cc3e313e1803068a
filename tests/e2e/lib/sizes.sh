# Small sizes of every shipped spec, so that every plan runs in moments
# (sourced by exec.sh and large_inputs.sh): `sizes SPEC` prints its
# NAME=V pairs (nothing for a spec not listed), `sets SPEC` the --set
# options.
sizes() {
  case "$1" in
  specs/mamba1.yaml) echo "B=2 I=9 d_model=16 d_inner=32 dt_rank=4 d_state=4" ;;
  specs/mamba2.yaml) echo "B=2 I=7 d_model=16 n_heads=4 head_dim=8 d_state=8" ;;
  specs/transformer.yaml) echo "B=2 M=5 D=16 H=2 E=4" ;;
  specs/fusemax_1pass.yaml) echo "B=2 H=2 E=4 F=3 M1=3 M0=4" ;;
  specs/fusemax_3pass.yaml) echo "B=2 H=2 E=4 F=3 M=7" ;;
  specs/prenorm_block.yaml) echo "B=2 M=5 d_model=8 H=2" ;;
  specs/prenorm_decode.yaml) echo "B=2 T=4 M=2 d_model=8 H=2" ;;
  specs/gated_deltanet.yaml) echo "B=2 I=5 D=8 H=2 E=3 F=4" ;;
  specs/mamba2_chunked.yaml) echo "B=2 C=3 L=4 n_heads=2 head_dim=3 d_state=2" ;;
  specs/mamba2_ssd.yaml) echo "B=2 C=3 L=4 d_model=8 n_heads=2 head_dim=3 d_state=2" ;;
  specs/cnn_layer.yaml) echo "B=2 C=2 K=3 P=6 Q=4 R=3 S=3" ;;
  *) echo "" ;;
  esac
}
sets() { for kv in $(sizes "$1"); do printf -- '--set %s ' "$kv"; done; }
