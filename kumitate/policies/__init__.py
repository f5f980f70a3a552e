"""Call policies declared in the spec and enforced once, in the pipeline, for every transport."""
