"""The results browser (issue 42): a static site of every model's predictions beside their rows (build), served on
loopback with range requests (serve) or published as a static Hugging Face Space (space)."""
