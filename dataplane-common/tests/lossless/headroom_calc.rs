use super::*;

#[test]
fn formula_against_a_hand_computed_example() {
    // 100G, 40 m, MTU 9100, 2000 ns measured emit latency, Mellanox
    // defaults (MAC/PHY 820 B, pipeline latency 18 KB):
    //   cable    = 2 x 40 x 100e9 / 1.98e8 / 8 = 40 x 100000 / 792
    //            = 5050.5 -> 5051
    //   peer     = 394 quanta x 64            = 25216
    //   response = 2000 ns x 12.5 B/ns         = 25000
    //   propagation = 9100 + 5051 + 820 + 25216 + 25000 = 65187
    //   xoff = 9100 + 65187 = 74287; xon = 18432; size = 92719
    assert_eq!(cable_bytes(40, G100), 5051);
    let h = headroom(&HeadroomInput::new(G100, 40, 9100, 2000));
    assert_eq!(
        h,
        Headroom {
            xoff: 74_287,
            xon: 18_432,
            size: 92_719
        }
    );
    // Explicit delays: 25G, 5 m, MTU 1500, no latency, no MAC/PHY, xon 0:
    //   cable = 5 x 25000 / 792 = 157.8 -> 158; peer = 80 x 64 = 5120
    //   xoff = 1500 + (1500 + 158 + 0 + 5120 + 0) = 8278
    let inp = HeadroomInput {
        mac_phy_delay: 0,
        pipeline_latency: 0,
        ..HeadroomInput::new(G25, 5, 1500, 0)
    };
    assert_eq!(
        headroom(&inp),
        Headroom {
            xoff: 8278,
            xon: 0,
            size: 8278
        }
    );
}

#[test]
fn peer_response_table_and_other_speeds() {
    for (s, q) in [
        (800_000, 905),
        (400_000, 905),
        (200_000, 453),
        (100_000, 394),
        (50_000, 147),
        (40_000, 118),
        (25_000, 80),
        (10_000, 67),
    ] {
        assert_eq!(peer_response_quanta(s), q);
    }
    // Next listed speed above; 905 above 800G; 67 below 10G.
    assert_eq!(peer_response_quanta(1_000), 67);
    assert_eq!(peer_response_quanta(20_000), 80);
    assert_eq!(peer_response_quanta(300_000), 905);
    assert_eq!(peer_response_quanta(1_600_000), 905);
}

#[test]
fn latency_bytes_round_up() {
    assert_eq!(bytes_for_nanos(1, G100), 13); // 12.5
    assert_eq!(bytes_for_nanos(8, 1000), 1);
    assert_eq!(bytes_for_nanos(9, 1000), 2);
    // Exact to 9.5 hours; beyond, at least 2^32 - 1 bytes per Mb/s.
    let h9 = 9 * 3600 * 1_000_000_000u64;
    assert_eq!(bytes_for_nanos(h9, G800), h9 * 100); // 100 B/ns
    assert!(bytes_for_nanos(u64::MAX, G800) >= u64::from(u32::MAX) * 800_000);
}

#[test]
fn validation_names_the_problem() {
    let w = WredProfile::AZURE_LOSSLESS;
    assert_eq!(validate_wred(&w), Ok(()));
    let bad = WredProfile {
        green_min_threshold: 3,
        green_max_threshold: 2,
        ..w
    };
    assert_eq!(validate_wred(&bad), Err(ConfigError::WredMinAboveMax));
    assert_eq!(
        validate_wred(&WredProfile {
            green_drop_probability: 101,
            ..w
        }),
        Err(ConfigError::WredProbabilityOver100)
    );
    assert_eq!(
        validate_wred(&WredProfile { ecn: 8, ..w }),
        Err(ConfigError::UnknownEcnMode)
    );

    let pool = SharedPool {
        size: 100_000,
        used: 0,
    };
    let p = BufferProfile {
        xon: 18_432,
        xoff: 74_287,
        ..lossless_profile()
    };
    assert_eq!(validate_buffer_profile(&p, &pool), Ok(()));
    assert_eq!(
        validate_buffer_profile(&BufferProfile { xon: 80_000, ..p }, &pool),
        Err(ConfigError::XonAboveXoff)
    );
    assert_eq!(
        validate_buffer_profile(&BufferProfile { xoff: 100_001, ..p }, &pool),
        Err(ConfigError::HeadroomExceedsPool)
    );
    for th in [-9i8, 8, i8::MIN, i8::MAX] {
        assert_eq!(
            validate_buffer_profile(
                &BufferProfile {
                    dynamic_th: th,
                    ..p
                },
                &pool
            ),
            Err(ConfigError::DynamicThOutOfRange)
        );
    }
    // A static profile does not care about dynamic_th.
    assert_eq!(
        validate_buffer_profile(
            &BufferProfile {
                dynamic_th: 99,
                mode: TH_STATIC,
                ..p
            },
            &pool
        ),
        Ok(())
    );
    assert_eq!(
        validate_buffer_profile(&BufferProfile { mode: 9, ..p }, &pool),
        Err(ConfigError::UnknownThresholdMode)
    );

    let h = headroom(&HeadroomInput::new(G100, 40, 9100, 2000));
    assert_eq!(validate_headroom(&h, &pool), Ok(()));
    assert_eq!(
        validate_headroom(
            &h,
            &SharedPool {
                size: 90_000,
                used: 0
            }
        ),
        Err(ConfigError::HeadroomExceedsPool)
    );
    assert_eq!(
        validate_headroom(
            &Headroom {
                xoff: 1,
                xon: 2,
                size: 3
            },
            &pool
        ),
        Err(ConfigError::XonAboveXoff)
    );
}
