"""The Hugging Face Hub: configs, dataset cards, licences, Parquet shards, publish."""
