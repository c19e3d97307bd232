"""One module per benchmark: its pure logic and the lm-eval hooks its YAML names."""
