//! The PFC frames the controller sends, captured on the peer by tshark (an
//! independent decoder) and checked field by field: destination, source =
//! the port's MAC, EtherType, opcode, class-enable vector, times, length.

mod common;

use common::tshark_capture;
use dataplane_user::lossless::pfc::PfcPort;
use testbed::netns::{veth, Netns};

#[test]
fn pfc_frames_on_the_wire_decode_in_tshark() {
    let sw = Netns::create("pfcsw").unwrap();
    let h = Netns::create("pfch").unwrap();
    veth(
        &sw,
        "sw-p0",
        "02:00:00:00:01:00",
        &h,
        "eth0",
        "02:00:00:00:00:01",
    )
    .unwrap();

    let tshark = tshark_capture(
        &h.name,
        "eth0",
        "ether proto 0x8808",
        3,
        &[],
        &[
            "eth.dst",
            "eth.src",
            "eth.type",
            "frame.len",
            "macc.opcode",
            "macc.cbfc.enbv",
            "macc.cbfc.pause_time.c3",
            "macc.cbfc.pause_time.c4",
            "macc.cbfc.pause_time.c0",
        ],
    );

    let mac = [2, 0, 0, 0, 1, 0];
    std::thread::scope(|s| {
        s.spawn(|| {
            let _in = sw.enter().unwrap();
            let port = PfcPort::open("sw-p0", mac).unwrap();
            port.xoff(1 << 3, 0xffff).unwrap();
            port.xoff((1 << 3) | (1 << 4), 1234).unwrap();
            port.xon(1 << 3).unwrap();
        });
    });
    let out = tshark.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 3, "tshark saw: {text}");
    let expect = [
        ("0x08", "65535", "0"),
        ("0x18", "1234", "1234"),
        ("0x08", "0", "0"),
    ];
    for (row, (enbv, c3, c4)) in rows.iter().zip(expect) {
        assert_eq!(row[0], "01:80:c2:00:00:01", "{row:?}");
        assert_eq!(
            row[1], "02:00:00:00:01:00",
            "source must be the port's MAC: {row:?}"
        );
        assert_eq!(row[2], "0x8808", "{row:?}");
        assert_eq!(row[3], "60", "{row:?}");
        assert_eq!(row[4], "0x0101", "{row:?}");
        assert_eq!(
            u16::from_str_radix(row[5].trim_start_matches("0x"), 16).unwrap(),
            u16::from_str_radix(enbv.trim_start_matches("0x"), 16).unwrap(),
            "{row:?}"
        );
        assert_eq!(row[6], c3, "{row:?}");
        assert_eq!(row[7], c4, "{row:?}");
        assert_eq!(row[8], "0", "{row:?}");
    }
    // a zero or multicast source MAC is refused
    assert!(PfcPort::open("lo", [0; 6]).is_err());
    assert!(PfcPort::open("lo", [1, 0, 0, 0, 0, 0]).is_err());
}
