// Package internal holds what rlock's packages share and users must not
// import: key naming (keys), Cluster slots (slot) and the Redis test harness
// (redistest).
package internal
