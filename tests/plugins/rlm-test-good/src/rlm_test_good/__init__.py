"""A well-behaved test plugin registering one component of every kind."""
