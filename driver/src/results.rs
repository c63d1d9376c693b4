//! TODO(owner helper): see docs/results-format.md and the issue.
