"""What the host does for every sink: ``delivery`` feeds each sink from its own thread, ``spans`` builds the run
tree's spans once for the span-shaped ones. The sinks themselves, ``local`` included, are plugins."""
