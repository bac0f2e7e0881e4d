package alarm

import "time"

// dueHeap is a min-heap of items by time; each item knows its place
// (Item.Place). (Written out rather than with container/heap, whose Push
// boxes each element.)
type dueHeap[T Item] []due[T]

// due is an item in the heap, at its time.
type due[T Item] struct {
	at time.Duration
	x  T
}

// put places e at i, telling its item.
func (d dueHeap[T]) put(i int, e due[T]) {
	d[i] = e
	*e.x.Place() = int32(i + 1)
}

// up moves the element at i towards the root until its parent is due no
// later.
func (d dueHeap[T]) up(i int) {
	e := d[i]
	for i > 0 {
		p := (i - 1) / 2
		if d[p].at <= e.at {
			break
		}
		d.put(i, d[p])
		i = p
	}
	d.put(i, e)
}

// down moves the element at i away from the root until its children are
// due no sooner.
func (d dueHeap[T]) down(i int) {
	e := d[i]
	for {
		c := 2*i + 1
		if c >= len(d) {
			break
		}
		if c+1 < len(d) && d[c+1].at < d[c].at {
			c++
		}
		if e.at <= d[c].at {
			break
		}
		d.put(i, d[c])
		i = c
	}
	d.put(i, e)
}

// fix restores the order after the time of the element at i changed.
func (d dueHeap[T]) fix(i int) {
	x := d[i].x
	d.up(i)
	d.down(int(*x.Place()) - 1)
}

// removeAt takes out the element at i and returns its item.
func (d *dueHeap[T]) removeAt(i int) T {
	x := (*d)[i].x
	last := len(*d) - 1
	if i != last {
		(*d)[i] = (*d)[last]
	}
	(*d)[last] = due[T]{}
	*d = (*d)[:last]
	if i != last {
		d.fix(i)
	}
	*x.Place() = 0
	return x
}
