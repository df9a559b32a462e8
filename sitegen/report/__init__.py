"""Reports for people: the capacity plan, the application inventory, the synth benchmark."""
