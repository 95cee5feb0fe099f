"""The translation strategies, one module each (header with its whole read, fingerprint, checkpoint,
mm2, timestamp): each decides the positions it can and says why not for the others. Only the
dispatcher (translate/plan.py) knows their order."""
