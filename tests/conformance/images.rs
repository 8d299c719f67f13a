//! What every [`ImageStore`] does, run on the RocksDB one and the PostgreSQL one: an image
//! kept is listed and served to its own team alone, counts stop where asked, a removal
//! takes the record and the bytes together, and erasing a team leaves others' images.

use herald::images::{Format, Image, ImageStore, PostgresImages, RocksImages};
use herald_queue::{Id, Store};

use crate::conformance::{postgres, rocksdb};

/// An image of `team_id` in `format`; `ids` is where ids and times come from.
fn image(ids: &Store, team_id: Id, format: Format, name: &str, bytes: &[u8]) -> Image {
    Image {
        id: ids.next_id(),
        team_id,
        secret: rand::random(),
        name: name.into(),
        format,
        bytes: bytes.len() as u64,
        created_at: ids.now(),
    }
}

/// What `images` serves for `image`, if anything.
fn served(images: &dyn ImageStore, image: &Image) -> Option<(Format, Vec<u8>)> {
    images
        .served(image.team_id, &image.secret)
        .expect("served")
        .map(|(format, bytes)| (format, bytes.to_vec()))
}

/// What every [`ImageStore`] does: `ids` is where ids and times come from.
fn image_store_conformance(images: &dyn ImageStore, ids: &Store) {
    let (team, other) = (ids.next_id(), ids.next_id());
    assert_eq!(images.count(team, 10).expect("count"), 0);
    assert!(images.newest(team, 10).expect("newest").is_empty());
    assert!(!images.delete(team, &[0; 16]).expect("delete"), "nothing to remove");

    // One image in each format, the last one larger than a block of the store.
    let large: Vec<u8> = (0..200_000u32).map(|n| n as u8).collect();
    let contents: Vec<(Format, Vec<u8>)> = vec![
        (Format::Png, b"\x89PNG\r\n\x1a\none".to_vec()),
        (Format::Jpeg, vec![0xff, 0xd8, 0xff, 0xe0, 2]),
        (Format::Gif, b"GIF89a three".to_vec()),
        (Format::Webp, [b"RIFF\0\0\0\0WEBP".as_slice(), &large].concat()),
    ];
    let made: Vec<Image> = contents
        .iter()
        .enumerate()
        .map(|(n, (format, bytes))| {
            let one = image(ids, team, *format, &format!("image {n}"), bytes);
            images.put(&one, bytes).expect("put");
            one
        })
        .collect();
    let theirs_bytes = b"GIF87a theirs".to_vec();
    let theirs = image(ids, other, Format::Gif, "theirs", &theirs_bytes);
    images.put(&theirs, &theirs_bytes).expect("put");

    // Listed newest first, as kept, up to the limit.
    let newest_first: Vec<Image> = made.iter().rev().cloned().collect();
    assert_eq!(images.newest(team, 10).expect("newest"), newest_first);
    assert_eq!(images.newest(team, 2).expect("newest"), newest_first[..2].to_vec());
    assert_eq!(images.newest(other, 10).expect("newest"), vec![theirs.clone()]);
    assert_eq!(images.count(team, 10).expect("count"), 4);
    assert_eq!(images.count(team, 3).expect("count"), 3, "counted up to at most");

    // Served with the format and bytes it was kept with, to its own team's address only.
    for (one, (format, bytes)) in made.iter().zip(&contents) {
        assert_eq!(served(images, one), Some((*format, bytes.clone())), "{}", one.name);
    }
    let elsewhere = Image {
        team_id: other,
        ..made[0].clone()
    };
    assert_eq!(
        served(images, &elsewhere),
        None,
        "another team's address serves nothing"
    );
    assert_eq!(served(images, &theirs), Some((Format::Gif, theirs_bytes.clone())));

    // Another team cannot remove it; its own removes record and bytes, once.
    assert!(!images.delete(other, &made[0].secret).expect("delete"));
    assert!(served(images, &made[0]).is_some(), "still served");
    assert!(images.delete(team, &made[0].secret).expect("delete"));
    assert_eq!(served(images, &made[0]), None, "served no more");
    assert_eq!(images.newest(team, 10).expect("newest"), newest_first[..3].to_vec());
    assert!(!images.delete(team, &made[0].secret).expect("delete"), "removed once");
    assert!(served(images, &made[1]).is_some(), "the others stay");

    // Erasing the team takes all of its images and none of another's.
    while images.erase_team(team).expect("erase") {}
    assert!(images.newest(team, 10).expect("newest").is_empty());
    assert_eq!(images.count(team, 10).expect("count"), 0);
    for one in &made {
        assert_eq!(served(images, one), None, "{} erased", one.name);
    }
    assert_eq!(images.newest(other, 10).expect("newest"), vec![theirs.clone()]);
    assert_eq!(served(images, &theirs), Some((Format::Gif, theirs_bytes)));
}

#[test]
fn rocksdb_images_keep_the_contract() {
    let (_dir, store) = rocksdb();
    image_store_conformance(&RocksImages::new(store.clone()), &store);
}

#[test]
fn postgres_images_keep_the_contract() {
    let (_dir, store) = rocksdb();
    image_store_conformance(&PostgresImages::new(postgres()), &store);
}
