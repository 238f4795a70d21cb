"""Dataset card templates (string.Template), installed as the package ``hf_tokbin.dataset_card``."""
