// Compound elements, parameters, defines, data literals and synonyms:
// the constructs of the Click language beyond declarations and chains.
// A `#` in the first column starts a preprocessor line, which is ignored.
# 4 "compound.click"

require(package "bricks-test");
define($DEV eth0, $BURST 8);

// Count and queue; the counter is reachable as `.../c`.
elementclass Counted { $n |
  input -> c :: Counter -> Queue($n) -> output;
}

// Two paths through one compound: input 0 is counted and unqueued,
// input 1 passes straight through to output 1.
elementclass Path { $dev, BURST $b |
  input -> Counted(100) -> Unqueue(BURST $b) -> [0]output;
  input[1] -> [1]output;
}

elementclass Sink Discard;

FromDevice($DEV) -> p :: Path($DEV, BURST $BURST) -> ToDevice($DEV);
InfiniteSource(DATA \<
  // Ethernet header, with a > and a ) in this comment
  00 00 c0 ae 67 ef  00 00 00 00 00 00  08 00
  /* IP header */ 45 00 00 28
>, LIMIT 5, STOP true) -> [1]p[1] -> Print("to sink: \"$DEV\"") -> Sink;
