"""CALUM (Jang, Kwon & Lukasiewicz 2021): fine-tuning with the transformers Trainer, C_R/C_S, MT-DNN
multitask, report."""
