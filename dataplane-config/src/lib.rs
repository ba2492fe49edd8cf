//! The controller's configuration: a TOML file with SONiC's field names.
//!
//! ```toml
//! [switch]
//! name = "sw1"            # instance: pin directory /sys/fs/bpf/dataplane/sw1
//! cnp_tc = 6              # class of RoCEv2 CNPs
//! malformed = "pass"      # default verdict for malformed frames: pass | drop
//!
//! [dscp_to_tc_map.ROCE]   # SONiC DSCP_TO_TC_MAP; "AZURE" is built in
//! default = 0             # class of DSCPs the map does not list
//! "26" = 3
//! "48" = 6
//!
//! [[port]]
//! name = "eth1"
//! trust = "dscp"          # dscp | dot1p
//! dscp_to_tc_map = "ROCE"
//! dot1p_to_tc_map = "AZURE"
//! pfc_enable = "3,4"      # SONiC PORT_QOS_MAP pfc_enable: lossless priorities
//!
//! [uet]                   # Ultra Ethernet (UDP 4793), optional
//! feedback_tc = 6         # class of PDS ACK/NACK/control, like cnp_tc
//! ```
//!
//! [`Config::validate`] checks everything and reports every problem at once,
//! each naming the field and what was expected. Nothing is applied unless
//! the whole file is valid.
//!
//! | module | concern |
//! |---|---|
//! | [`schema`] | the TOML sections as written (serde) |
//! | [`validate`] | checks by section, every error at once, builds the plan |
//! | [`plan`] | the validated plan every target is configured from |
//! | [`values`] | value parsers (MAC, speed, prefix, PFC list, maps) |
//! | [`error`] | errors that name their field |
//! | `group` | next-hop group values computed from the plan |
//! | [`sonic`] | SONiC CONFIG_DB (`config_db.json`) import and export |
//! | [`reference`] | every key documented: the guide's configuration reference |

mod error;
mod group;
mod plan;
pub mod reference;
mod schema;
pub mod sonic;
mod validate;
mod values;

pub use error::{ConfigError, FieldError};
pub use group::{group_value, hash_placement};
pub use plan::*;
pub use schema::*;
pub use values::{
    check_instance_name, parse_mac, parse_pfc_enable, parse_prefix, parse_speed, DEFAULT_SPEED_MBPS,
};
