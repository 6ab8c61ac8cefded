"""The cacheable prefix: the launch-to-launch fingerprint and the doctor (static and live)."""
