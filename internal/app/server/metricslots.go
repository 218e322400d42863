package server

import (
	"context"
	"fmt"
	"time"

	"github.com/fenced/fenced"
	"github.com/prometheus/client_golang/prometheus"
)

// keySlotsInUseDesc describes fenced_key_slots_in_use.
var keySlotsInUseDesc = prometheus.NewDesc("fenced_key_slots_in_use",
	"Running attempts of jobs with a concurrency key now, by queue.", []string{"queue"}, nil)

// jobsHeldBackDesc describes fenced_jobs_held_back.
var jobsHeldBackDesc = prometheus.NewDesc("fenced_jobs_held_back",
	"Due queued jobs whose concurrency key has reached its limit now, by queue.", []string{"queue"}, nil)

// keySlotsCollector reads the concurrency keys in use at scrape time
// (Client.ListKeySlots) and sums them by queue. Every queue with a key in
// use reports both gauges, zeros included; a queue without is absent; past
// maxQueues queues, the others' are summed under otherQueue.
type keySlotsCollector struct {
	c         *fenced.Client
	maxQueues int
}

func (k keySlotsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- keySlotsInUseDesc
	ch <- jobsHeldBackDesc
}

func (k keySlotsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ks, err := k.c.ListKeySlots(ctx, "")
	if err != nil {
		err = fmt.Errorf("key slots: %w", err)
		ch <- prometheus.NewInvalidMetric(keySlotsInUseDesc, err)
		ch <- prometheus.NewInvalidMetric(jobsHeldBackDesc, err)
		return
	}
	inUse, heldBack := map[string]int64{}, map[string]int64{}
	var order []string
	for _, s := range ks {
		if _, seen := inUse[s.Queue]; !seen {
			order = append(order, s.Queue)
		}
		inUse[s.Queue] += s.Running
		heldBack[s.Queue] += s.HeldBack()
	}
	order = capQueues(order, k.maxQueues, func(from, to string) {
		inUse[to] += inUse[from]
		heldBack[to] += heldBack[from]
	})
	for _, q := range order {
		ch <- prometheus.MustNewConstMetric(keySlotsInUseDesc, prometheus.GaugeValue, float64(inUse[q]), q)
		ch <- prometheus.MustNewConstMetric(jobsHeldBackDesc, prometheus.GaugeValue, float64(heldBack[q]), q)
	}
}
