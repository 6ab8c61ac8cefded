"""Agent definitions: the YAML edge, the frozen spec, rendering the instructions, delivering them."""
