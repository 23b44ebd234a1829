package catalog

// The index's two large tables, the entries and the names, are kept in blocks of a fixed size rather than in
// one slice each: a slice that grows copies itself, and at ten million schedules the copy and the original
// (hundreds of megabytes) would both be live for a moment, the console's peak memory.

const (
	entryBlock = 1 << 16 // entries a block
	nameBits   = 20      // a name block is 1 MiB: a name's reference is its block << nameBits | its place in it
	nameBlock  = 1 << nameBits
	maxBlocks  = 1 << (32 - nameBits) // of names: the references are 32 bits
)

// entries is the index's entries by number.
type entries struct {
	blocks [][]entry
	n      int
}

func (es *entries) at(i uint32) *entry { return &es.blocks[i/entryBlock][i%entryBlock] }

// add appends e and returns its number.
func (es *entries) add(e entry) uint32 {
	if es.n%entryBlock == 0 {
		es.blocks = append(es.blocks, make([]entry, entryBlock))
	}
	i := es.n
	es.blocks[i/entryBlock][i%entryBlock] = e
	es.n++
	return uint32(i)
}

// nameArena holds every name back to back in blocks; a name never spans two.
type nameArena struct {
	blocks [][]byte
	size   int // bytes held, for the tests
}

// get returns the name of length n at reference ref, in place.
func (ns *nameArena) get(ref uint32, n uint8) []byte {
	b, at := ref>>nameBits, ref&(nameBlock-1)
	return ns.blocks[b][at : at+uint32(n)]
}

// room reports whether a name of n bytes can be added.
func (ns *nameArena) room(n int) bool {
	last := len(ns.blocks) - 1
	return last >= 0 && len(ns.blocks[last])+n <= nameBlock || len(ns.blocks) < maxBlocks
}

// add appends name (at most nameBlock bytes; room says whether it fits) and returns its reference.
func (ns *nameArena) add(name []byte) uint32 {
	last := len(ns.blocks) - 1
	if last < 0 || len(ns.blocks[last])+len(name) > nameBlock {
		ns.blocks = append(ns.blocks, make([]byte, 0, nameBlock))
		last++
	}
	at := len(ns.blocks[last])
	ns.blocks[last] = append(ns.blocks[last], name...)
	ns.size += len(name)
	return uint32(last)<<nameBits | uint32(at)
}
