"""Seeing a run: TensorBoard event files (`tbevents`), PNG curves (`plot`, `harnessrl plot`) and one
self-contained HTML page (`page`, `harnessrl report`) read from a run folder (`runs`)."""
