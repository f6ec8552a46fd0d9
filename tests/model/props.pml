/*
 * props.pml - the LTL property (the assertions are in the code paths
 * they watch; see README.md).
 *
 * term: the shutdown sequence runs to its end.  Checked with weak
 * fairness: a handler that never looks at its token may spin forever,
 * and the grace still ends the wait for it.
 */
ltl term { <> shutdown_done }
