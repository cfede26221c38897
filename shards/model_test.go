package shards

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// modelLimits is one setting of a collection type's compact-encoding
// limits that its model test runs under.
type modelLimits struct {
	name            string
	entries, values int64
}

// runModel runs a model test under each setting of limits (applied with
// set): rounds fresh collections, each driven through steps random
// operations by the step function that start returns for the subtest. The
// seed is logged.
func runModel(t *testing.T, limits []modelLimits, set func(entries, values int64), rounds, steps int,
	start func(t *testing.T, rnd *rand.Rand) func(step int)) {
	for _, lim := range limits {
		t.Run(lim.name, func(t *testing.T) {
			seed := rand.Uint64()
			t.Logf("seed %d", seed)
			rnd := rand.New(rand.NewPCG(seed, uint64(len(lim.name))))
			set(lim.entries, lim.values)
			for round := 0; round < rounds; round++ {
				step := start(t, rnd)
				for i := 0; i < steps; i++ {
					step(round*1000 + i)
				}
			}
		})
	}
}

// fuzzModel is the body of a model fuzz test: limits picked by lim (the
// defaults def, none at all, or small ones), then 200 random operations
// from seed.
func fuzzModel(seed uint64, lim uint8, set func(entries, values int64), def [2]int64, start func(rnd *rand.Rand) func(step int)) {
	defer set(def[0], def[1])
	switch lim % 3 {
	case 0:
		set(def[0], def[1])
	case 1:
		set(0, 0)
	default:
		set(int64(lim%16), int64(lim))
	}
	step := start(rand.New(rand.NewPCG(seed, uint64(lim))))
	for i := 0; i < 200; i++ {
		step(i)
	}
}

// memoryCase is one data set of a memory test: keys × entries made by
// fill, and the most bytes an entry may take (what Redis took).
type memoryCase struct {
	name          string
	keys, entries int
	ceiling       float64
	fill          func(st *Store, key []byte, rnd *rand.Rand)
}

// checkMemory fills a store with each case's data and checks the heap it
// takes per entry against the case's ceiling.
func checkMemory(t *testing.T, cases []memoryCase) {
	if raceEnabled {
		t.Skip("the race detector changes allocation sizes; .ci/run runs this without -race")
	}
	if testing.Short() {
		t.Skip("fills a million entries")
	}
	for _, c := range cases {
		perEntry := memoryPerEntry(t, c.keys, c.entries, c.fill)
		t.Logf("%s: %.1f B/entry (ceiling %.1f)", c.name, perEntry, c.ceiling)
		require.LessOrEqual(t, perEntry, c.ceiling, c.name)
	}
}
