"""Data selection for language-model pretraining: DSIR importance resampling (dsir) and DoReMi (doremi)."""
