"""What Tokenplay does with many tokenizers at once, above the engines and below the web (no web imports here)."""
