// Package calendarstore keeps a namespace's named calendars (package calendar) on their compacted topic,
// <ns>.calendars: one record per name, the value calendar.Encode's stored form (JSON, major version in "v"), a
// tombstone for a deleted calendar.
//
// The writers (tickgroup.Schedules: `ticker calendar`, apply files) Put and Delete records, and check before they
// write: a schedule excludes only calendars that exist (CheckExclude), and a calendar is deleted only once no
// schedule excludes it (CheckDelete). Two writers at once can still make a schedule that excludes a calendar
// nobody has; a reader must bear that.
//
// Readers take each key's newest valid definition: Load reads the topic once, a View follows it. Anyone with
// Write on the topic can write a record, so a record that is no valid calendar of its key (not JSON, another
// major version, a name that differs from its key, a calendar without working days, more than
// calendar.MaxRecordBytes) is refused, counted (tickgroup_calendar_records_refused_total) and logged once per
// key: the key keeps its last valid definition, and a forged record never takes a calendar away.
//
// The state of a key, as the records of the topic fold it:
//
//	             valid record                 valid record
//	(no calendar) ───────────▶ (calendar C) ─────────────▶ (calendar C')
//	      ▲                      │    ▲  │
//	      └──────tombstone───────┘    └──┘ refused record: C is kept, counted, logged once
//
// The change log records each put and deletion (ops calendar_put and calendar_delete, keyed Key(name)).
package calendarstore
