//! "Last cached time was ..." in the local time zone, as sonic-utilities
//! prints `datetime.now().isoformat()`. The expected strings are Python's:
//! `TZ=<tz> python3 -c 'import datetime; print(datetime.datetime
//! .fromtimestamp(T).replace(microsecond=US).isoformat())'`.
//!
//! One test: it sets the process's TZ, which other threads would see.

use dataplane_user::show::baseline::format_local;

#[test]
fn cached_time_is_python_isoformat_in_local_time() {
    let cases: [(&str, [&str; 4]); 4] = [
        (
            "UTC0",
            [
                "2026-11-27T22:00:00.123456",
                "2026-11-27T22:00:00",
                "2026-07-02T13:46:40.000007",
                "1970-01-01T00:00:00",
            ],
        ),
        (
            "IST-5:30",
            [
                "2026-11-28T03:30:00.123456",
                "2026-11-28T03:30:00",
                "2026-07-02T19:16:40.000007",
                "1970-01-01T05:30:00",
            ],
        ),
        (
            "EST5EDT,M3.2.0,M11.1.0",
            [
                "2026-11-27T17:00:00.123456",
                "2026-11-27T17:00:00",
                "2026-07-02T09:46:40.000007",
                "1969-12-31T19:00:00",
            ],
        ),
        (
            "NZST-12NZDT,M9.5.0,M4.1.0/3",
            [
                "2026-11-28T11:00:00.123456",
                "2026-11-28T11:00:00",
                "2026-07-03T01:46:40.000007",
                "1970-01-01T13:00:00",
            ],
        ),
    ];
    let times = [
        (1_795_816_800, 123_456),
        (1_795_816_800, 0),
        (1_783_000_000, 7),
        (0, 0),
    ];
    for (tz, want) in cases {
        std::env::set_var("TZ", tz);
        for ((secs, us), want) in times.iter().zip(want) {
            assert_eq!(format_local(*secs, *us), want, "TZ={tz} t={secs} us={us}");
        }
    }
}
