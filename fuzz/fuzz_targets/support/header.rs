//! Header annotations for the element fuzz targets.

use bricks_packet::Packet;

/// A header annotation pointing anywhere: `pick` below 128 puts it
/// `pick * unit` bytes into the frame (even past its end), from 128 on
/// `pick - 128` bytes before the frame's start.
pub fn anywhere(p: &mut Packet, pick: u8, unit: usize) {
    if pick < 128 {
        p.set_network_header(usize::from(pick) * unit);
    } else {
        let before = usize::from(pick - 128);
        if p.push_front(before).is_ok() {
            p.set_network_header(0);
            p.pull_front(before);
        }
    }
}
