package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"flrh.dev/flrh/store"
)

// testDeliveryParking holds the store to store.DeliveryParking: a
// delivery parked reads back whole, on the store's clock; parked again it
// is one delivery refused twice; each hook keeps its most recently
// refused; unparked it is gone; bad arguments write nothing; deliveries
// parked at once are all counted.
func testDeliveryParking(t *testing.T, s store.Store, c *Clock) {
	p, ok := store.DeliveryParkingOf(s)
	if !ok {
		t.Skip("the store parks no deliveries")
	}
	d := store.ParkedDelivery{Key: "shop:m-1", Hook: "shop", Event: "refund.requested", Body: []byte(`{"amount":900}`),
		Status: 422, Reason: "the input: /refunds/0/amount: the body has nothing at {/data/amount}"}
	must(t, p.ParkDelivery(ctx, d, 3))
	first := c.Now()
	got, err := p.ParkedDelivery(ctx, "shop:m-1")
	must(t, err)
	if got.Key != d.Key || got.Hook != d.Hook || got.Event != d.Event || !bytes.Equal(got.Body, d.Body) || got.Status != 422 ||
		got.Reason != d.Reason || got.Times != 1 || !got.First.Equal(first) || !got.Last.Equal(first) {
		t.Fatalf("parked %+v, read %+v (now %s)", d, got, first)
	}

	// Refused again a minute later, with another body: one delivery.
	c.Advance(time.Minute)
	again := d
	again.Body, again.Status, again.Reason = []byte(`{"amount":901}`), 404, "no run order-1"
	must(t, p.ParkDelivery(ctx, again, 3))
	got, err = p.ParkedDelivery(ctx, "shop:m-1")
	must(t, err)
	if got.Times != 2 || !got.First.Equal(first) || !got.Last.Equal(c.Now()) || string(got.Body) != `{"amount":901}` || got.Status != 404 || got.Reason != "no run order-1" {
		t.Fatalf("refused again: %+v", got)
	}

	// Three more for shop (keep 3): the two refused longest ago go; the
	// other hook's stay.
	must(t, p.ParkDelivery(ctx, store.ParkedDelivery{Key: "tracker:1", Hook: "tracker", Body: []byte(`{}`), Status: 422}, 3))
	for i := 2; i <= 4; i++ {
		c.Advance(time.Second)
		must(t, p.ParkDelivery(ctx, store.ParkedDelivery{Key: fmt.Sprintf("shop:m-%d", i), Hook: "shop", Body: []byte(`{}`), Status: 422}, 3))
	}
	list, err := p.ParkedDeliveries(ctx, "shop", 10)
	must(t, err)
	if keys := parkedKeys(list); keys != "shop:m-4 shop:m-3 shop:m-2" {
		t.Fatalf("shop keeps %s, want its three most recently refused, newest first", keys)
	}
	if list, err := p.ParkedDeliveries(ctx, "shop", 2); err != nil || parkedKeys(list) != "shop:m-4 shop:m-3" {
		t.Fatalf("shop limited to 2: %s, %v", parkedKeys(list), err)
	}
	if list, err := p.ParkedDeliveries(ctx, "tracker", 10); err != nil || parkedKeys(list) != "tracker:1" {
		t.Fatalf("tracker keeps %s, %v", parkedKeys(list), err)
	}
	_, err = p.ParkedDelivery(ctx, "shop:m-1")
	mustCode(t, err, store.CodeNotFound)

	// Unparked: gone, and a second unpark finds nothing.
	if dropped, err := p.UnparkDelivery(ctx, "shop:m-3"); err != nil || !dropped {
		t.Fatalf("unpark: %v, %v", dropped, err)
	}
	if dropped, err := p.UnparkDelivery(ctx, "shop:m-3"); err != nil || dropped {
		t.Fatalf("unpark again: %v, %v", dropped, err)
	}
	_, err = p.ParkedDelivery(ctx, "shop:m-3")
	mustCode(t, err, store.CodeNotFound)

	// Refused arguments write nothing.
	for _, bad := range []struct {
		d    store.ParkedDelivery
		keep int
	}{
		{store.ParkedDelivery{Key: "shop:x", Hook: "shop", Body: []byte(`{}`), Status: 422}, 0},
		{store.ParkedDelivery{Key: "shop:x", Hook: "shop", Body: []byte(`{}`), Status: 200}, 3},
		{store.ParkedDelivery{Key: "shop:x", Hook: "tracker", Body: []byte(`{}`), Status: 422}, 3},
		{store.ParkedDelivery{Key: "shop:x", Hook: "shop", Status: 422}, 3},
		{store.ParkedDelivery{Key: "shopx", Hook: "shop", Body: []byte(`{}`), Status: 422}, 3},
		{store.ParkedDelivery{Key: "shop:x", Hook: "shop", Body: []byte(`{}`), Status: 422, Reason: "\xff"}, 3},
	} {
		mustCode(t, p.ParkDelivery(ctx, bad.d, bad.keep), store.CodeInvalidInput)
	}
	if list, err := p.ParkedDeliveries(ctx, "shop", 10); err != nil || parkedKeys(list) != "shop:m-4 shop:m-2" {
		t.Fatalf("after refused arguments shop keeps %s, %v", parkedKeys(list), err)
	}
	_, err = p.ParkedDeliveries(ctx, "", 10)
	mustCode(t, err, store.CodeInvalidInput)
	counts, err := p.ParkedCounts(ctx)
	must(t, err)
	if fmt.Sprint(counts) != fmt.Sprintf("[{shop 2 %s} {tracker 1 %s}]", first.Add(time.Minute+time.Second), first.Add(time.Minute)) {
		t.Fatalf("counts %v", counts)
	}

	// Eight refusals of one delivery at once: one delivery, refused 8
	// times.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			errs <- p.ParkDelivery(ctx, store.ParkedDelivery{Key: "race:1", Hook: "race", Body: []byte(`{}`), Status: 422}, 5)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	if got, err := p.ParkedDelivery(ctx, "race:1"); err != nil || got.Times != 8 {
		t.Fatalf("parked at once 8 times: %+v, %v", got, err)
	}
}

func parkedKeys(list []store.ParkedDelivery) string {
	var b bytes.Buffer
	for i, d := range list {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(d.Key)
	}
	return b.String()
}
